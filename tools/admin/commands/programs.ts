import type { Environment } from '@lop/contract';
import { Option, type Command } from 'commander';
import { grantPrograms, revokeProgramGrants } from '@lop/domain';
import { ENVIRONMENT_CHOICES, uuidArgument } from '../arguments';
import { operatorActor } from '../operator';
import { withDatabase } from '../database';
import { jsonOption, print, table, UsageError, type OutputOptions } from '../output';

export function registerPrograms(program: Command): void {
  const programs = program.command('programs').description("programs an API client may use, per environment");

  programs
    .command('grant')
    .description("grant one program, or all of the laboratory's programs, to an API client in one environment (granting twice is harmless)")
    .requiredOption('--client <id>', 'API client id (uuid)', uuidArgument)
    .option('--program <id>', 'program id (uuid); it must belong to the chosen environment', uuidArgument)
    .option('--all', "every program of the client's laboratory in the chosen environment")
    .addOption(new Option('--environment <environment>', 'sandbox or production').choices(ENVIRONMENT_CHOICES).makeOptionMandatory())
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { client: string; program?: string; all?: boolean; environment: Environment }) => {
      if (Boolean(options.program) === Boolean(options.all)) throw new UsageError('name exactly one of --program <id> or --all');
      const result = await withDatabase((db) =>
        grantPrograms(db, { clientId: options.client, environment: options.environment, programId: options.program, all: options.all }, operatorActor()),
      );
      print(result, options, (r) =>
        [
          `Granted ${r.granted.length} ${r.environment} program(s) to client ${r.client_id}:`,
          table(r.granted, [['program_id', (p) => p.program_id], ['name', (p) => p.name]], `The laboratory has no ${r.environment} programs.`),
        ].join('\n'),
      );
    });

  programs
    .command('revoke')
    .description(
      "withdraw one program, or all, from an API client in one environment: its orders, results, reports and retrieval paths answer 404 from then on (nothing is deleted; grant again to restore; revoking twice is harmless)",
    )
    .requiredOption('--client <id>', 'API client id (uuid)', uuidArgument)
    .option('--program <id>', 'program id (uuid)', uuidArgument)
    .option('--all', 'every program granted to the client in the chosen environment')
    .addOption(new Option('--environment <environment>', 'sandbox or production').choices(ENVIRONMENT_CHOICES).makeOptionMandatory())
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { client: string; program?: string; all?: boolean; environment: Environment }) => {
      if (Boolean(options.program) === Boolean(options.all)) throw new UsageError('name exactly one of --program <id> or --all');
      const result = await withDatabase((db) =>
        revokeProgramGrants(db, { clientId: options.client, environment: options.environment, programId: options.program, all: options.all }, operatorActor()),
      );
      print(result, options, (r) =>
        [
          `Revoked ${r.revoked.length} ${r.environment} program(s) from client ${r.client_id}:`,
          table(r.revoked, [['program_id', (p) => p.program_id], ['name', (p) => p.name]], 'Nothing was granted, so nothing was revoked.'),
        ].join('\n'),
      );
    });
}
