import type { Command } from 'commander';
import { bannerKeyNote, loadConfig, seedDemoWithBannerKey, type DemoBannerSeedResult } from '@lop/domain';
import { withDatabase } from '../database';
import { fields, jsonOption, print, table, type OutputOptions } from '../output';

export function registerSeedDemo(program: Command): void {
  program
    .command('seed-demo')
    .description('create (or find) the demo laboratory, its programs and API client, and show the sandbox key npm start prints (the same one each time)')
    .option('--new-key', 'revoke that sandbox key and issue a new one (e.g. it leaked); keys created with keys create are untouched')
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { newKey?: boolean }) => {
      const { PARTNER_DATA_DIR } = loadConfig();
      const result = await withDatabase((db) => seedDemoWithBannerKey(db, { dataDir: PARTNER_DATA_DIR, newKey: options.newKey }));
      print(result, options, readable);
    });
}

function readable(result: DemoBannerSeedResult): string {
  return [
    'Demo laboratory ready (seeding again finds the same rows and the same key).',
    fields([
      ['laboratory_id', result.laboratory_id],
      ['client_id', result.client_id],
      ['sandbox_key_id', result.sandbox_key_id],
      ['sandbox_key', `${result.sandbox_key}  (${bannerKeyNote(result.sandbox_key_status, result.sandbox_key_file)})`],
    ]),
    '',
    table(result.programs, [['program_id', (p) => p.program_id], ['environment', (p) => p.environment], ['name', (p) => p.name]], 'No programs.'),
  ].join('\n');
}
