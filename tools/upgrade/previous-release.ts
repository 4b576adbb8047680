import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '@lop/domain';

/**
 * The release before this one: the commit that last landed on main before this release's
 * migrations. The rolling-upgrade test runs it beside this checkout; move it forward when a
 * release lands (docs/operations.md § Upgrading).
 */
export const PREVIOUS_RELEASE = '378471bf3ba54748a826752151a0a5f549bee5c8';

export interface ReleaseTree {
  commit: string;
  root: string;
  /** The release's own migrations journal: the tags it knows. */
  migrationTags: string[];
}

export interface Lockfile {
  packages: Record<string, { version?: string; link?: boolean }>;
}

/**
 * The previous release's sources (git archive of the commit, into the system's temporary folder) with a
 * node_modules of links into this checkout's, its workspace packages pointing at its own sources.
 * Sharing the installed packages is only right when the previous release installed the same
 * versions of everything it has; otherwise this refuses rather than run it on the wrong ones.
 */
export function preparePreviousRelease(commit: string = PREVIOUS_RELEASE): ReleaseTree {
  // Outside this checkout (its bundler treats anything under a node_modules folder as a package),
  // and one per checkout: its links point into this checkout's node_modules.
  const checkout = createHash('sha256').update(PROJECT_ROOT).digest('hex').slice(0, 12);
  const root = join(tmpdir(), 'lop-releases', `${commit}-${checkout}`);
  const done = join(root, '.prepared');
  if (!existsSync(done)) {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    try {
      execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: PROJECT_ROOT, stdio: 'ignore' });
    } catch {
      throw new Error(`the previous release ${commit} is not in this clone's history (a shallow clone? fetch it, or clone with full history)`);
    }
    execFileSync('bash', ['-c', `git archive --format=tar ${commit} | tar -x -C "${root}"`], { cwd: PROJECT_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    linkInstalledPackages(root);
    writeFileSync(done, `${new Date().toISOString()}\n`);
  }
  const journal = JSON.parse(readFileSync(join(root, 'libs/db/migrations/meta/_journal.json'), 'utf8')) as { entries: { tag: string }[] };
  return { commit, root, migrationTags: journal.entries.map((entry) => entry.tag) };
}

function linkInstalledPackages(root: string): void {
  const ours = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package-lock.json'), 'utf8')) as Lockfile;
  const theirs = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as Lockfile;
  const { differing, absent } = compareInstalls(ours, theirs);
  if (differing.length > 0) throw new Error(`the previous release installs other package versions than this checkout (${differing.slice(0, 5).join(', ')}…): run it from its own npm ci`);
  // A package this checkout dropped is missing from the links: harmless while nothing of the
  // previous release's own imports it (it came with another dropped package, or was never used).
  const imported = absent.filter((name) => importedBySources(root, name));
  if (imported.length > 0) throw new Error(`the previous release imports packages this checkout no longer installs (${imported.join(', ')}): run it from its own npm ci`);
  const patches = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.patch')).map((name) => `${name}\n${readFileSync(join(dir, name), 'utf8')}`) : []);
  if (patches(join(root, 'patches')).join('\n') !== patches(join(PROJECT_ROOT, 'patches')).join('\n')) {
    throw new Error('the previous release patches its packages otherwise than this checkout (patches/): run it from its own npm ci');
  }

  const installed = join(PROJECT_ROOT, 'node_modules');
  const target = join(root, 'node_modules');
  mkdirSync(target);
  for (const name of readdirSync(installed)) {
    if (name === '.cache' || name === '@lop') continue;
    symlinkSync(join(installed, name), join(target, name));
  }
  // The workspace packages: the same relative links, so they resolve to the previous release's sources.
  mkdirSync(join(target, '@lop'));
  for (const name of readdirSync(join(installed, '@lop'))) {
    const link = join(installed, '@lop', name);
    if (lstatSync(link).isSymbolicLink()) symlinkSync(readlinkSync(link), join(target, '@lop', name));
  }
}

/**
 * How the previous release's installed packages differ from this checkout's. `differing`: a
 * package at the same place in a different version, or one that would resolve to this checkout's
 * copy instead of its own (a nested package whose parent is still installed): linking would run
 * other code than the release's. `absent`: packages this checkout no longer installs at all (the
 * outermost name of each), which linking can only leave out. A nested copy only this checkout
 * has, under a package both install, differs too: the release would find it first.
 */
export function compareInstalls(ours: Lockfile, theirs: Lockfile): { differing: string[]; absent: string[] } {
  const differing: string[] = [];
  const absent = new Set<string>();
  for (const [path, entry] of Object.entries(theirs.packages)) {
    if (!path.startsWith('node_modules/') || entry.link || ours.packages[path]?.version === entry.version) continue;
    const outermost = path.split('/node_modules/')[0]!;
    if (ours.packages[path] === undefined && ours.packages[outermost] === undefined) absent.add(outermost.slice('node_modules/'.length));
    else differing.push(`${path.slice('node_modules/'.length)}@${entry.version}`);
  }
  // A nested copy only this checkout has would be found before the one the previous release resolves.
  for (const path of Object.keys(ours.packages)) {
    const nestedAt = path.lastIndexOf('/node_modules/');
    if (nestedAt > 0 && theirs.packages[path] === undefined && theirs.packages[path.slice(0, nestedAt)] !== undefined) {
      differing.push(`${path.slice('node_modules/'.length)} (only here)`);
    }
  }
  return { differing, absent: [...absent] };
}

const SOURCE_FOLDERS = ['apps', 'libs', 'tools'];

/** Whether any source file of the release at `root` names the package in an import, export or require. */
function importedBySources(root: string, name: string): boolean {
  const specifier = new RegExp(`['"]${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(/[^'"]*)?['"]`);
  const visit = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((entry) => {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) return false;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return visit(path);
      return /\.(c|m)?[jt]sx?$/.test(entry.name) && specifier.test(readFileSync(path, 'utf8'));
    });
  return SOURCE_FOLDERS.some((folder) => existsSync(join(root, folder)) && visit(join(root, folder)));
}
