import { nextPeriod, type Sql } from '@lop/db';
import { periodOf, STORED_COLUMNS, type StoredRecord } from './chain';

/** One record as `admin audit list` and `admin audit export` show it. */
export interface AuditRecordView {
  id: number;
  recorded_at: string;
  kind: string;
  laboratory_id: string | null;
  client_id: string | null;
  environment: string | null;
  key_id: string | null;
  actor: string;
  action: string;
  door: string;
  route: string | null;
  status: number | null;
  request_id: string | null;
  order_id: string | null;
  resource_id: string | null;
  details: Record<string, unknown> | null;
  content_hash: string;
  seal_seq: number | null;
  chain_hash: string | null;
}

/** A stored record, sealed or not yet (chain.ts's StoredRecord is always sealed). */
type Stored = Omit<StoredRecord, 'seal_seq' | 'chain_hash'> & { seal_seq: string | null; chain_hash: Buffer | null };

const viewOf = (r: Stored): AuditRecordView => ({
  id: Number(r.id),
  recorded_at: new Date(Number(r.ms)).toISOString(),
  kind: r.kind,
  laboratory_id: r.laboratory_id,
  client_id: r.client_id,
  environment: r.environment,
  key_id: r.key_id,
  actor: r.actor,
  action: r.action,
  door: r.door,
  route: r.route,
  status: r.status,
  request_id: r.request_id,
  order_id: r.order_id,
  resource_id: r.resource_id,
  details: r.details === null ? null : (JSON.parse(r.details) as Record<string, unknown>),
  content_hash: r.content_hash.toString('hex'),
  seal_seq: r.seal_seq === null ? null : Number(r.seal_seq),
  chain_hash: r.chain_hash ? r.chain_hash.toString('hex') : null,
});

export interface AuditListFilter {
  /** An order id, or a result, retrieval, key, program or subscription id. */
  resource?: string;
  laboratoryId?: string;
  clientId?: string;
  keyId?: string;
  kind?: 'read' | 'control';
  from?: Date;
  to?: Date;
  limit?: number;
  /** The `next` of the previous page. */
  before?: string;
}

export interface AuditPage {
  records: AuditRecordView[];
  /** Pass as `before` for the next (older) page; null on the last page. */
  next: string | null;
}

const CURSOR = /^(\d+):(\d+)$/;

/** Records newest first, filtered, a page at a time (cursor: the last record's time and id). */
export async function listAuditRecords(sql: Sql, filter: AuditListFilter = {}): Promise<AuditPage> {
  const limit = Math.min(Math.max(filter.limit ?? 50, 1), 1000);
  const conditions: string[] = [];
  const params: (string | number)[] = [];
  const add = (condition: (n: string) => string, value: string | number) => {
    params.push(value);
    conditions.push(condition(`$${params.length}`));
  };
  if (filter.resource) add((n) => `(order_id = ${n} or resource_id = ${n})`, filter.resource);
  if (filter.laboratoryId) add((n) => `laboratory_id = ${n}::uuid`, filter.laboratoryId);
  if (filter.clientId) add((n) => `client_id = ${n}::uuid`, filter.clientId);
  if (filter.keyId) add((n) => `key_id = ${n}::uuid`, filter.keyId);
  if (filter.kind) add((n) => `kind = ${n}`, filter.kind);
  if (filter.from) add((n) => `recorded_at >= ${n}::timestamptz`, filter.from.toISOString());
  if (filter.to) add((n) => `recorded_at < ${n}::timestamptz`, filter.to.toISOString());
  if (filter.before) {
    const match = CURSOR.exec(filter.before);
    if (!match) throw new Error(`not a cursor of admin audit list: ${filter.before}`);
    params.push(new Date(Number(match[1])).toISOString(), match[2]);
    conditions.push(`(recorded_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`);
  }
  params.push(limit + 1);
  const rows = await sql.unsafe<Stored[]>(
    `select ${STORED_COLUMNS} from audit_records ${conditions.length ? `where ${conditions.join(' and ')}` : ''} order by recorded_at desc, id desc limit $${params.length}`,
    params,
  );
  const records = rows.slice(0, limit).map(viewOf);
  const last = rows.length > limit ? rows[limit - 1] : undefined;
  return { records, next: last ? `${last.ms}:${last.id}` : null };
}

/** A line of the export: a sealed record, or the head of its month's chain as far as the export went. */
export type ExportLine =
  | ({ type: 'record'; cursor: string } & AuditRecordView)
  | { type: 'chain_head'; period: string; seal_seq: number; chain_hash: string; cursor: string };

const EXPORT_CURSOR = /^(\d{4}-\d{2}-01):(\d+)$/;

/**
 * The sealed records of [from, to), month by month in chain order, each followed by nothing but
 * its own chain values, and each month closed by its chain head as far as exported: a SIEM can
 * recompute every link, and keeps the heads as the outside copy that makes a rewrite evident.
 * Only sealed records are exported (their order is final), so a run can be resumed after the
 * last line's `cursor` without missing or repeating a record.
 */
export async function* exportAuditRecords(sql: Sql, options: { from: Date; to: Date; after?: string; pageSize?: number }): AsyncGenerator<ExportLine> {
  let afterPeriod: string | undefined;
  let afterSeq = 0;
  if (options.after) {
    const match = EXPORT_CURSOR.exec(options.after);
    if (!match) throw new Error(`not a cursor of admin audit export: ${options.after}`);
    [afterPeriod, afterSeq] = [match[1], Number(match[2])];
  }
  const pageSize = options.pageSize ?? 1000;
  for (let start = new Date(`${periodOf(options.from)}T00:00:00Z`); start < options.to; start = nextPeriod(start, 'month')) {
    const period = start.toISOString().slice(0, 10);
    if (afterPeriod && period < afterPeriod) continue;
    let seq = afterPeriod === period ? afterSeq : 0;
    let last: AuditRecordView | undefined;
    const lower = new Date(Math.max(start.getTime(), options.from.getTime()));
    const upper = new Date(Math.min(nextPeriod(start, 'month').getTime(), options.to.getTime()));
    for (;;) {
      const rows = await sql.unsafe<Stored[]>(
        `select ${STORED_COLUMNS} from audit_records
         where recorded_at >= $1 and recorded_at < $2 and seal_seq > $3 and recorded_at >= $4 and recorded_at < $5
         order by seal_seq limit $6`,
        [start.toISOString(), nextPeriod(start, 'month').toISOString(), seq, lower.toISOString(), upper.toISOString(), pageSize],
      );
      for (const row of rows) {
        last = viewOf(row);
        seq = last.seal_seq!;
        yield { type: 'record', cursor: `${period}:${seq}`, ...last };
      }
      if (rows.length < pageSize) break;
    }
    if (last) yield { type: 'chain_head', period, seal_seq: last.seal_seq!, chain_hash: last.chain_hash!, cursor: `${period}:${last.seal_seq}` };
  }
}
