// Bundles the CLI into one file with every dependency inlined (commander, openapi-fetch, @lop/contract), so the
// package `npm pack` makes installs and runs with nothing else: no dependencies, no build step.
// Usage: node apps/partner-cli/scripts/bundle.mjs <outfile.mjs>  (relative to the working directory)
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const [outfile] = process.argv.slice(2);
if (!outfile) {
  console.error('usage: node scripts/bundle.mjs <outfile.mjs>');
  process.exit(2);
}

await build({
  entryPoints: [fileURLToPath(new URL('../src/main.ts', import.meta.url))],
  outfile: resolve(outfile),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  legalComments: 'inline',
  logLevel: 'warning',
  // commander is CommonJS: inside an ES module bundle its require() calls need a real require.
  banner: { js: "import { createRequire as __lopCreateRequire } from 'node:module';\nconst require = __lopCreateRequire(import.meta.url);" },
});
console.log(`built ${outfile}`);
