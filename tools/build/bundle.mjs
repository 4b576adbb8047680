// Bundles one entry point with our own workspace libraries inlined and npm packages left
// external, so `node dist/apps/<app>/main.js` runs against the installed node_modules.
import { cpSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';

const [entry, outfile] = process.argv.slice(2);
if (!entry || !outfile) {
  console.error('usage: node tools/build/bundle.mjs <entry.ts> <outfile.js>');
  process.exit(2);
}

await build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  plugins: [
    {
      name: 'externalize-npm-packages',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith('@lop/') ? undefined : { path: args.path, external: true }));
      },
    },
  ],
});
// The migrator reads SQL files at run time; ship them beside the bundle.
mkdirSync(dirname(outfile), { recursive: true });
cpSync('libs/db/migrations', join(dirname(outfile), 'migrations'), { recursive: true });
console.log(`built ${outfile}`);
