#!/usr/bin/env node
// The `lop` command. In the repository it runs the TypeScript sources through tsx (a workspace
// dependency), so `npx lop` needs no build step; a packed package has no sources, only the
// self-contained bundle that `npm pack` built (scripts/bundle.mjs), and runs that.
import { existsSync } from 'node:fs';

const source = new URL('../src/main.ts', import.meta.url);
if (existsSync(source)) {
  const { tsImport } = await import('tsx/esm/api');
  await tsImport(source.href, import.meta.url);
} else {
  await import(new URL('../dist/lop.mjs', import.meta.url).href);
}
