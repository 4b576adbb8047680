import { type Environment, type Scope, SCOPES } from '@lop/contract';
import { Option, type Command } from 'commander';
import { createKey, listKeys, revokeKey } from '@lop/domain';
import { ENVIRONMENT_CHOICES, expiresInArgument, scopesArgument, uuidArgument } from '../arguments';
import { operatorActor } from '../operator';
import { withDatabase } from '../database';
import { fields, jsonOption, print, table, type OutputOptions } from '../output';

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('API keys of an API client: the key text is shown once, at creation');

  keys
    .command('create')
    .description('issue a new API key for an API client')
    .requiredOption('--client <id>', 'API client id (uuid)', uuidArgument)
    .addOption(new Option('--environment <environment>', 'sandbox (lop_test_ keys) or production (lop_live_ keys)').choices(ENVIRONMENT_CHOICES).makeOptionMandatory())
    .requiredOption('--scopes <scopes>', `comma-separated list, or all: ${SCOPES.join(', ')}`, scopesArgument)
    .option('--expires-in <duration>', 'expire after this long: 30m, 12h, 7d, 90d (default: never)', expiresInArgument)
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { client: string; environment: Environment; scopes: Scope[]; expiresIn?: Date }) => {
      const key = await withDatabase((db) =>
        createKey(db, { clientId: options.client, environment: options.environment, scopes: options.scopes, expiresAt: options.expiresIn }, operatorActor()),
      );
      print(key, options, (k) =>
        [
          `Created a ${k.environment} key for client ${k.client_id}. Store it now: it cannot be shown again.`,
          fields([
            ['key', k.key],
            ['key_id', k.key_id],
            ['scopes', k.scopes.join(', ')],
            ['expires_at', k.expires_at ?? 'never'],
          ]),
        ].join('\n'),
      );
    });

  keys
    .command('list')
    .description("list an API client's keys with their status (active, expired, revoked); key text is never shown")
    .requiredOption('--client <id>', 'API client id (uuid)', uuidArgument)
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { client: string }) => {
      const rows = await withDatabase((db) => listKeys(db, options.client));
      print(rows, options, (list) =>
        table(
          list,
          [
            ['key_id', (k) => k.key_id],
            ['prefix', (k) => `${k.prefix}…`],
            ['environment', (k) => k.environment],
            ['status', (k) => k.status],
            ['expires_at', (k) => k.expires_at ?? 'never'],
            ['scopes', (k) => (k.scopes.length === SCOPES.length ? 'all' : k.scopes.join(','))],
            // The service's own keys (the npm start banner key) say so; an administrator's show '-'.
            ['purpose', (k) => k.purpose ?? '-'],
          ],
          'This client has no keys.',
        ),
      );
    });

  keys
    .command('revoke')
    .description('revoke a key; every replica refuses it from the next request on')
    .argument('<key_id>', 'key id (uuid), as shown by keys create or keys list', uuidArgument)
    .addOption(jsonOption())
    .action(async (keyId: string, options: OutputOptions) => {
      const result = await withDatabase((db) => revokeKey(db, keyId, operatorActor()));
      print(result, options, (r) => `Revoked key ${r.key_id} at ${r.revoked_at}.`);
    });
}
