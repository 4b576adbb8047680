import { InvalidArgumentError, type Command } from 'commander';
import { MIGRATION_DEFAULTS, readSchemaVerdict, runMigrations, type SchemaVerdict } from '@lop/db';
import { withLocation } from '../database';
import { jsonOption, print, type OutputOptions } from '../output';

interface MigrateCommandOptions extends OutputOptions {
  status?: boolean;
  maxAttempts: number;
}

interface MigrateResult {
  applied: string[];
  retries: number;
  schema: SchemaVerdict;
}

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('apply the pending migrations of this release (npm run migrate), without long locks; progress on stderr')
    .option('--status', 'only say which migrations are pending and whether this release serves the schema; changes nothing')
    .option('--max-attempts <n>', 'tries of a statement that meets a lock timeout or deadlock before the run fails', attemptsArgument, MIGRATION_DEFAULTS.maxAttempts)
    .addOption(jsonOption())
    .action(async (options: MigrateCommandOptions) => {
      const result = await withLocation(async (location): Promise<MigrateResult> => {
        const run = options.status
          ? { applied: [], retries: 0 }
          : await runMigrations(location.url, { maxAttempts: options.maxAttempts, onProgress: (line) => process.stderr.write(`${line}\n`), applicationName: 'admin-migrate' });
        return { ...run, schema: await readSchemaVerdict(location.url) };
      });
      print(result, options, readable(options.status === true));
      if (!result.schema.servable) process.exitCode = 1;
    });
}

function readable(statusOnly: boolean) {
  return (result: MigrateResult): string => {
    const lines: string[] = [];
    if (!statusOnly) lines.push(result.applied.length === 0 ? 'Nothing to migrate: every migration of this release is applied.' : `Applied ${result.applied.length} migration(s): ${result.applied.join(', ')}${result.retries ? ` (${result.retries} retried lock waits)` : ''}.`);
    if (!result.schema.servable) lines.push(result.schema.sentence);
    else if (result.schema.pending.length > 0) lines.push(`This release serves the schema; pending: ${result.schema.pending.join(', ')} (npm run migrate applies them).`);
    else if (statusOnly) lines.push('The schema is current: this release serves it and has nothing to apply.');
    return lines.join('\n');
  };
}

function attemptsArgument(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 100) throw new InvalidArgumentError('expected a whole number from 1 to 100.');
  return value;
}
