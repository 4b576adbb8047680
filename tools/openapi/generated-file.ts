import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { PROJECT_ROOT } from '@lop/domain';

/** Stable JSON text for a committed, generated file: two-space indent, final newline. */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Writes a generated file, or with `--check` fails when the committed one differs from what the
 * code generates now, so an API change cannot land without its artifacts.
 */
export function writeOrCheck(files: { path: string; content: string }[], options: { check: boolean; command: string }): void {
  const stale: string[] = [];
  for (const file of files) {
    const absolute = resolve(PROJECT_ROOT, file.path);
    let current: string | null = null;
    try {
      current = readFileSync(absolute, 'utf8');
    } catch {
      current = null;
    }
    if (options.check) {
      if (current !== file.content) stale.push(file.path);
      continue;
    }
    mkdirSync(dirname(absolute), { recursive: true });
    if (current !== file.content) writeFileSync(absolute, file.content);
    console.log(`${current === file.content ? 'unchanged' : 'wrote'} ${relative(PROJECT_ROOT, absolute)}`);
  }
  if (stale.length > 0) {
    console.error(`out of date: ${stale.join(', ')} differ from what the code generates; run \`${options.command}\` and commit the result`);
    process.exit(1);
  }
  if (options.check) console.log(`up to date: ${files.map((f) => f.path).join(', ')}`);
}
