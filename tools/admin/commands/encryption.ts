import { InvalidArgumentError, type Command } from 'commander';
import {
  encryptionStatus,
  KeyRotationRefused,
  loadConfig,
  PLAIN_DECIMAL,
  PROTECTED_COLUMNS,
  protectorFor,
  retireEncryptionKeyAs,
  rotateEncryptionKeyAs,
  type EncryptionStatus,
} from '@lop/domain';
import { withDatabase } from '../database';
import { operatorActor } from '../operator';
import { fields, jsonOption, print, table, UsageError, type OutputOptions } from '../output';

function versionArgument(text: string): number {
  const n = PLAIN_DECIMAL.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a key version: a whole number from 1, as `admin encryption status` lists them.');
  return n;
}

/** A refusal is the operator's to act on (exit code 2), not a failure of the command. */
const refusalAsUsage = (error: unknown) => {
  throw error instanceof KeyRotationRefused ? new UsageError(error.message) : error;
};

function describeStatus(s: EncryptionStatus): string {
  const tables = PROTECTED_COLUMNS.map(({ table }) => table);
  const remaining = tables.reduce((n, t) => n + s.job.remaining[t], 0);
  return [
    `Current key version: ${s.current_version}`,
    '',
    table(
      s.versions,
      [
        ['version', (v) => `${v.version}${v.current ? ' (current)' : ''}`],
        ['created_at', (v) => v.created_at],
        ...tables.map((t): [string, (v: EncryptionStatus['versions'][number]) => string] => [t, (v) => String(v.rows[t])]),
      ],
      'No key versions.',
    ),
    '',
    `Re-encryption to version ${s.job.target_version}:`,
    fields([
      ['re-encrypted rows', String(s.job.reencrypted_rows)],
      ['remaining rows', `${remaining} (${tables.map((t) => `${t} ${s.job.remaining[t]}`).join(', ')})`],
      ['last batch at', s.job.last_batch_at ?? '-'],
      ['done at', s.job.done_at ?? (remaining === 0 ? '-' : 'running or waiting for the worker')],
    ]),
  ].join('\n');
}

/**
 * Encryption-key rotation (docs/operations.md § Key and secret rotation). Thin: every operation is
 * libs/domain/src/security/key-rotation.ts, recorded in the audit trail by control-plane.ts's wrappers.
 */
export function registerEncryption(program: Command): void {
  const encryption = program.command('encryption').description('rotate the key that encrypts personal data at rest, watch re-encryption, retire old keys');

  encryption
    .command('rotate')
    .description('add a key version: new writes use it at once; the delivery worker re-encrypts existing rows in the background')
    .addOption(jsonOption())
    .action(async (options: OutputOptions) => {
      const config = loadConfig();
      const result = await withDatabase((_db, session) => rotateEncryptionKeyAs(session.sql, protectorFor(config), operatorActor())).catch(refusalAsUsage);
      print(result, options, (r) =>
        `Added key version ${r.version}; new writes use it. The delivery worker re-encrypts rows of version ${r.previous} and older: watch \`admin encryption status\`, then \`admin encryption retire ${r.previous}\`.`,
      );
    });

  encryption
    .command('status')
    .description('rows per key version per protected table, and the re-encryption job\'s progress')
    .addOption(jsonOption())
    .action(async (options: OutputOptions) => {
      const result = await withDatabase((_db, session) => encryptionStatus(session.sql)).catch(refusalAsUsage);
      print(result, options, describeStatus);
    });

  encryption
    .command('retire')
    .description('delete an old key version once no row needs it (refused otherwise); never the current one')
    .argument('<version>', 'key version, as `admin encryption status` lists it', versionArgument)
    .addOption(jsonOption())
    .action(async (version: number, options: OutputOptions) => {
      const result = await withDatabase((_db, session) => retireEncryptionKeyAs(session.sql, version, operatorActor())).catch(refusalAsUsage);
      print(result, options, (r) => `Retired key version ${r.version}; the current version is ${r.current_version}.`);
    });
}
