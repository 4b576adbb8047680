import type { Command } from 'commander';
import { seedDemo, type DemoSeedResult } from '@lop/domain';
import { withDatabase } from '../database';
import { fields, jsonOption, print, table, type OutputOptions } from '../output';

export function registerSeedDemo(program: Command): void {
  program
    .command('seed-demo')
    .description('create (or find) the demo laboratory, its programs and API client, and issue a new sandbox key')
    .addOption(jsonOption())
    .action(async (options: OutputOptions) => {
      const result = await withDatabase((db) => seedDemo(db));
      print(result, options, readable);
    });
}

function readable(result: DemoSeedResult): string {
  return [
    'Demo laboratory ready (seeding again finds the same rows; only the key is new).',
    fields([
      ['laboratory_id', result.laboratory_id],
      ['client_id', result.client_id],
      ['sandbox_key_id', result.sandbox_key_id],
      ['sandbox_key', `${result.sandbox_key}  (all scopes; shown only now)`],
    ]),
    '',
    table(result.programs, [['program_id', (p) => p.program_id], ['environment', (p) => p.environment], ['name', (p) => p.name]], 'No programs.'),
  ].join('\n');
}
