import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { once } from 'node:events';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { AUDIT_DEFAULTS, exportAuditRecords, listAuditRecords, loadConfig, verifyAuditTrail, type AuditRecordView } from '@lop/domain';
import { uuidArgument } from '../arguments';
import { withDatabase } from '../database';
import { jsonOption, print, table, UsageError, type OutputOptions } from '../output';

function instantArgument(text: string): Date {
  const at = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/.test(text) ? new Date(text) : new Date(NaN);
  if (Number.isNaN(at.getTime())) throw new InvalidArgumentError('expected a date (2026-11-01) or an ISO 8601 date-time with an offset (2026-11-01T09:30:00Z).');
  return at;
}

function limitArgument(text: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new InvalidArgumentError('expected a whole number from 1 to 1000.');
  return n;
}

function resourceArgument(text: string): string {
  const id = text.trim();
  if (id.length === 0 || id.length > 200) throw new InvalidArgumentError('expected an order, result, key, program or subscription id.');
  return id;
}

const marginSeconds = () => loadConfig().PARTNER_AUDIT_SEAL_MARGIN_SECONDS ?? AUDIT_DEFAULTS.sealMarginSeconds;

const ids = (r: AuditRecordView) => [r.order_id && `order ${r.order_id}`, r.resource_id && r.resource_id !== r.order_id && `resource ${r.resource_id}`].filter(Boolean).join(', ') || '-';

/** The chain_head lines of an export. */
function headsOf(text: string): { period: string; seal_seq: number; chain_hash: string }[] {
  const heads = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let parsed: { type?: unknown; period?: unknown; seal_seq?: unknown; chain_hash?: unknown };
    try {
      parsed = JSON.parse(line) as typeof parsed;
    } catch {
      throw new UsageError('--heads is not an export of admin audit export (a line is not JSON)');
    }
    if (parsed.type !== 'chain_head') continue;
    if (typeof parsed.period !== 'string' || !/^\d{4}-\d{2}-01$/.test(parsed.period) || !Number.isInteger(parsed.seal_seq) || typeof parsed.chain_hash !== 'string') {
      throw new UsageError('--heads has a chain_head line without period, seal_seq and chain_hash');
    }
    heads.push({ period: parsed.period, seal_seq: parsed.seal_seq as number, chain_hash: parsed.chain_hash });
  }
  return heads;
}

export function registerAudit(program: Command): void {
  const audit = program.command('audit').description('the access audit trail: who read or changed what, and when (docs/audit.md)');

  audit
    .command('list')
    .description('audit records, newest first, a page at a time')
    .option('--resource <id>', 'an order id, or a result, key, program or subscription id', resourceArgument)
    .option('--laboratory <id>', 'laboratory id (uuid)', uuidArgument)
    .option('--client <id>', 'API client id (uuid)', uuidArgument)
    .option('--key <id>', 'API key id (uuid)', uuidArgument)
    .addOption(new Option('--kind <kind>', 'partner reads or control-plane actions').choices(['read', 'control']))
    .option('--from <time>', 'recorded at or after (date or ISO 8601 date-time)', instantArgument)
    .option('--to <time>', 'recorded before', instantArgument)
    .option('--limit <n>', 'records per page, 1 to 1000 (default 50)', limitArgument)
    .option('--before <cursor>', "the previous page's next cursor")
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { resource?: string; laboratory?: string; client?: string; key?: string; kind?: 'read' | 'control'; from?: Date; to?: Date; limit?: number; before?: string }) => {
      if (options.before !== undefined && !/^\d+:\d+$/.test(options.before)) throw new UsageError('--before takes the next cursor a previous page printed');
      const page = await withDatabase((_db, session) =>
        listAuditRecords(session.sql, { resource: options.resource, laboratoryId: options.laboratory, clientId: options.client, keyId: options.key, kind: options.kind, from: options.from, to: options.to, limit: options.limit, before: options.before }),
      );
      print(page, options, (p) =>
        [
          table(
            p.records,
            [
              ['recorded_at', (r) => r.recorded_at],
              ['action', (r) => r.action],
              ['status', (r) => (r.status === null ? '-' : String(r.status))],
              ['actor', (r) => r.actor],
              ['client_id', (r) => r.client_id ?? '-'],
              ['environment', (r) => r.environment ?? '-'],
              ['ids', ids],
              ['request_id', (r) => r.request_id ?? '-'],
            ],
            'No audit records match.',
          ),
          ...(p.next ? [`More: --before ${p.next}`] : []),
        ].join('\n'),
      );
    });

  audit
    .command('export')
    .description('sealed audit records as JSON lines (one record a line, each month closed by its chain head), for a SIEM; resumable with --after')
    .requiredOption('--from <time>', 'recorded at or after (date or ISO 8601 date-time)', instantArgument)
    .option('--to <time>', 'recorded before (default: now)', instantArgument)
    .option('--after <cursor>', "resume after this line's cursor (the last line a previous run wrote)")
    .option('--out <file>', 'write to this file (appended to with --after) instead of stdout')
    .action(async (options: { from: Date; to?: Date; after?: string; out?: string }) => {
      if (options.after !== undefined && !/^\d{4}-\d{2}-01:\d+$/.test(options.after)) throw new UsageError('--after takes the cursor of the last exported line, such as 2026-11-01:1234');
      const to = options.to ?? new Date();
      if (to <= options.from) throw new UsageError('--to must be after --from');
      const out = options.out ? createWriteStream(options.out, { flags: options.after ? 'a' : 'w' }) : process.stdout;
      let lines = 0;
      await withDatabase((_db, session) =>
        (async () => {
          for await (const line of exportAuditRecords(session.sql, { from: options.from, to, after: options.after })) {
            if (!out.write(`${JSON.stringify(line)}\n`)) await once(out, 'drain');
            lines++;
          }
        })(),
      );
      if (options.out) {
        await new Promise<void>((resolve, reject) => (out as ReturnType<typeof createWriteStream>).end((error?: Error | null) => (error ? reject(error) : resolve())));
        process.stderr.write(`Exported ${lines} line(s) to ${options.out}.\n`);
      }
    });

  audit
    .command('verify')
    .description("recompute every month's hash chain: exit 1 when a record was edited or deleted")
    .option('--heads <file>', 'an earlier export (JSON lines) whose chain_head lines must still match: detects a rewrite of chain and heads together')
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { heads?: string }) => {
      const exportedHeads = options.heads ? headsOf(await readFile(options.heads, 'utf8').catch((error: Error) => {
        throw new UsageError(`cannot read --heads: ${error.message}`);
      })) : undefined;
      const report = await withDatabase((_db, session) => verifyAuditTrail(session.sql, { marginSeconds: marginSeconds(), exportedHeads }));
      print(report, options, (r) =>
        [
          r.ok ? `The audit trail verifies: ${r.checked} sealed record(s) in ${r.periods.length} month(s).` : `The audit trail does NOT verify: ${r.problems.length} problem(s).`,
          ...r.problems.map((p) => `  ${p.period.slice(0, 7)} ${p.kind}: ${p.message}`),
          ...r.periods.map((p) => `  ${p.period.slice(0, 7)}  ${p.sealed} sealed, head ${p.head ?? '(none)'}`),
          `${r.unsealed} record(s) not sealed yet (younger than the margin${r.overdue > 0 ? `; ${r.overdue} overdue: is the delivery worker's maintenance running?` : ''}).`,
        ].join('\n'),
      );
      if (!report.ok) process.exitCode = 1;
    });
}
