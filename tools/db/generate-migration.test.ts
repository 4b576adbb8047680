import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const generate = (...args: string[]) => spawnSync(process.execPath, ['tools/db/generate-migration.mjs', ...args], { cwd: root, encoding: 'utf8' });

describe('npm run db:generate', () => {
  it('refuses a migration without a descriptive name (drizzle-kit would pick a random one), exit 2 with the usage', () => {
    for (const args of [[], ['--name', 'slimy'], ['--name', 'Add-Source'], ['--nmae', 'add_source']]) {
      const run = generate(...args);
      expect(run.status, args.join(' ')).toBe(2);
      expect(run.stderr).toContain('usage: npm run db:generate -- --name <what_it_does>');
    }
  });
});
