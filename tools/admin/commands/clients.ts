import type { Command } from 'commander';
import { createClient, listClients } from '@lop/domain';
import { nameArgument, uuidArgument } from '../arguments';
import { operatorActor } from '../operator';
import { withDatabase } from '../database';
import { fields, jsonOption, print, table, type OutputOptions } from '../output';

type Client = Awaited<ReturnType<typeof createClient>>;

export function registerClients(program: Command): void {
  const clients = program.command('clients').description('API clients: the partner integrations registered with a laboratory');

  clients
    .command('create')
    .description('register a new API client with a laboratory')
    .requiredOption('--laboratory <id>', 'laboratory id (uuid)', uuidArgument)
    .requiredOption('--name <name>', "the partner's name as administrators will recognise it", nameArgument)
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { laboratory: string; name: string }) => {
      const client = await withDatabase((db) => createClient(db, options.laboratory, options.name, operatorActor()));
      print(client, options, (c) =>
        ['API client created. Next: grant programs, then create a key.', fields(describe(c))].join('\n'),
      );
    });

  clients
    .command('list')
    .description('list API clients, of one laboratory or of all')
    .option('--laboratory <id>', 'only this laboratory (uuid)', uuidArgument)
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { laboratory?: string }) => {
      const rows = await withDatabase((db) => listClients(db, options.laboratory));
      print(rows, options, (list) =>
        table(
          list,
          [
            ['client_id', (c) => c.client_id],
            ['laboratory_id', (c) => c.laboratory_id],
            ['status', (c) => c.status],
            ['name', (c) => c.name],
          ],
          'No API clients.',
        ),
      );
    });
}

function describe(client: Client): [string, string][] {
  return [
    ['client_id', client.client_id],
    ['laboratory_id', client.laboratory_id],
    ['name', client.name],
    ['status', client.status],
  ];
}
