import { createHash } from 'node:crypto';
import { listPartitions, periodStart, nextPeriod, type Sql } from '@lop/db';
import { contentHashOf, type AuditRow } from './record';

/**
 * Tamper evidence (docs/audit.md § Verification). Every record carries a content hash from its
 * insert. The sealing pass, in the delivery worker's maintenance, chains the records older than a
 * safety margin, month by month: each gets the next position in its month's chain and
 * chain_hash = SHA-256(previous chain hash ‖ "id:position" ‖ content hash), and the month's head
 * (count, last chain hash) is kept in audit_chain_heads. Writers never wait for it: records are
 * inserted without touching any shared row, and only the sealer (one at a time, by a
 * transaction-scoped try-lock that writers never take) updates the heads.
 */

/** The month a record belongs to, as its chain's key: `2026-11-01`. */
export const periodOf = (at: Date) => periodStart(at, 'month').toISOString().slice(0, 10);

/** Where a month's chain starts. */
export const genesisOf = (period: string) => createHash('sha256').update(`lop-audit-genesis:${period}`).digest();

export function chainHashOf(previous: Buffer, id: number, position: number, contentHash: Buffer): Buffer {
  return createHash('sha256').update(previous).update(`${id}:${position}`).update(contentHash).digest();
}

const SEAL_LOCK = "hashtext('audit_records'), 1";

export interface SealOutcome {
  sealed: number;
  /** False when another sealer held the lock: it seals instead. */
  ran: boolean;
}

/**
 * Seals every record recorded before now − margin that is not sealed yet, in batches, oldest first.
 * A record committed late (its transaction ran long) is sealed by a later pass, at the end of its
 * month's chain: positions follow sealing order, not recording order.
 */
export async function sealAuditTrail(sql: Sql, options: { marginSeconds: number; now?: Date; batch?: number }): Promise<SealOutcome> {
  const cutoff = new Date((options.now ?? new Date()).getTime() - options.marginSeconds * 1000);
  const batch = options.batch ?? 2000;
  let sealed = 0;
  for (;;) {
    const done = await sql.begin(async (tx) => {
      const [{ locked }] = await tx<{ locked: boolean }[]>`select pg_try_advisory_xact_lock(${tx.unsafe(SEAL_LOCK)}) as locked`;
      if (!locked) return -1;
      const rows = await tx<{ id: string; ms: string; at: string; content_hash: Buffer }[]>`
        select id, (extract(epoch from recorded_at) * 1000)::bigint as ms, recorded_at::text as at, content_hash from audit_records
        where seal_seq is null and recorded_at < ${cutoff.toISOString()}
        order by recorded_at, id limit ${batch}`;
      if (rows.length === 0) return 0;
      const byPeriod = new Map<string, { id: string; ms: string; at: string; content_hash: Buffer }[]>();
      for (const row of rows) {
        const period = periodOf(new Date(Number(row.ms)));
        byPeriod.set(period, [...(byPeriod.get(period) ?? []), row]);
      }
      for (const [period, records] of byPeriod) {
        const [head] = await tx<{ sealed_count: string; head_hash: Buffer }[]>`
          select sealed_count, head_hash from audit_chain_heads where period = ${period} for update`;
        let previous: Buffer = head ? head.head_hash : genesisOf(period);
        let position = head ? Number(head.sealed_count) : 0;
        const ids: string[] = [];
        const ats: string[] = [];
        const positions: number[] = [];
        const chains: string[] = [];
        for (const record of records) {
          position += 1;
          previous = chainHashOf(previous, Number(record.id), position, record.content_hash);
          ids.push(record.id);
          ats.push(record.at);
          positions.push(position);
          chains.push(previous.toString('hex'));
        }
        const from = new Date(`${period}T00:00:00Z`);
        const to = nextPeriod(from, 'month');
        // Bounded by the month, so only its partition is touched; each row found by its key (recorded_at, id).
        await tx`
          update audit_records a set seal_seq = v.position, chain_hash = decode(v.chain, 'hex')
          from unnest(${ids}::bigint[], ${ats}::text[], ${positions}::bigint[], ${chains}::text[]) as v(id, at, position, chain)
          where a.recorded_at = v.at::timestamptz and a.id = v.id and a.recorded_at >= ${from.toISOString()} and a.recorded_at < ${to.toISOString()} and a.seal_seq is null`;
        await tx`
          insert into audit_chain_heads (period, sealed_count, head_hash, sealed_at)
          values (${period}, ${position}, ${previous}, now())
          on conflict (period) do update set sealed_count = excluded.sealed_count, head_hash = excluded.head_hash, sealed_at = excluded.sealed_at`;
      }
      return rows.length;
    });
    if (done < 0) return { sealed, ran: false };
    sealed += done;
    if (done < batch) return { sealed, ran: true };
  }
}

export interface VerifyProblem {
  period: string;
  /** `edited`: a record's content no longer matches its hash; `chain_broken`: its chain link does not follow; `missing`: positions or records are gone; `head_mismatch`: the month's head differs. */
  kind: 'edited' | 'chain_broken' | 'missing' | 'head_mismatch';
  recordId?: number;
  position?: number;
  message: string;
}

export interface VerifyReport {
  ok: boolean;
  periods: { period: string; sealed: number; head: string | null }[];
  checked: number;
  /** Records not sealed yet (younger than the margin, or sealing is behind): not yet protected. */
  unsealed: number;
  /** Unsealed records older than twice the margin: the sealing pass is not running. */
  overdue: number;
  problems: VerifyProblem[];
}

export interface StoredRecord {
  id: string;
  ms: string;
  kind: string;
  laboratory_id: string | null;
  client_id: string | null;
  environment: 'sandbox' | 'production' | null;
  key_id: string | null;
  actor: string;
  action: string;
  door: string;
  route: string | null;
  status: number | null;
  request_id: string | null;
  order_id: string | null;
  resource_id: string | null;
  details: string | null;
  content_hash: Buffer;
  seal_seq: string;
  chain_hash: Buffer;
}

/** The stored columns as the row they were hashed from. */
export function rowOfStored(r: Omit<StoredRecord, 'seal_seq' | 'chain_hash' | 'content_hash' | 'id'>): Omit<AuditRow, 'contentHash'> {
  return {
    recordedAt: new Date(Number(r.ms)),
    kind: r.kind,
    laboratoryId: r.laboratory_id,
    clientId: r.client_id,
    environment: r.environment,
    keyId: r.key_id,
    actor: r.actor,
    action: r.action,
    door: r.door,
    route: r.route,
    status: r.status,
    requestId: r.request_id,
    orderId: r.order_id,
    resourceId: r.resource_id,
    details: r.details === null ? null : (JSON.parse(r.details) as Record<string, unknown>),
  };
}

/** Columns read for verification and export: times as epoch milliseconds and JSON as text, whatever the pool parses. */
export const STORED_COLUMNS = `id, (extract(epoch from recorded_at) * 1000)::bigint as ms, kind, laboratory_id, client_id, environment, key_id, actor, action, door, route, status,
  request_id, order_id, resource_id, details::text as details, content_hash, seal_seq, chain_hash`;

/**
 * Recomputes every month's chain from the stored records and compares it with the stored links
 * and heads: an edited record (its content hash), a record deleted from the middle (a gap in the
 * positions, a link that does not follow) or from the end (the head's count and hash), a month's
 * records all deleted (a head without records). The heads themselves are trusted here: compare
 * them with an exported copy kept elsewhere (`admin audit export`) to detect a rewrite of everything.
 */
export async function verifyAuditTrail(
  sql: Sql,
  options: {
    marginSeconds: number;
    now?: Date;
    /** Chain heads kept outside the database (the export's chain_head lines): each must still be the chain's link at its position. */
    exportedHeads?: { period: string; seal_seq: number; chain_hash: string }[];
  },
): Promise<VerifyReport> {
  const heads = await sql<{ period: string; sealed_count: string; head_hash: Buffer }[]>`
    select period::text as period, sealed_count, head_hash from audit_chain_heads order by period`;
  const headOf = new Map(heads.map((h) => [h.period, h]));
  // Months with sealed records but no head are checked too (a deleted head).
  const partitions = await listPartitions(sql, 'audit_records');
  const periods = new Set(heads.map((h) => h.period));
  for (const p of partitions) if (p.from) periods.add(periodOf(p.from));
  const problems: VerifyProblem[] = [];
  const report: VerifyReport['periods'] = [];
  let checked = 0;
  for (const period of [...periods].sort()) {
    const from = new Date(`${period}T00:00:00Z`);
    const to = nextPeriod(from, 'month');
    const head = headOf.get(period);
    let previous: Buffer = genesisOf(period);
    let expected = 1;
    let sealedHere = 0;
    const cursor = sql.unsafe<StoredRecord[]>(
      `select ${STORED_COLUMNS} from audit_records where recorded_at >= $1 and recorded_at < $2 and seal_seq is not null order by seal_seq, id`,
      [from.toISOString(), to.toISOString()],
    ).cursor(1000);
    for await (const rows of cursor) {
      for (const r of rows) {
        const id = Number(r.id);
        const position = Number(r.seal_seq);
        sealedHere++;
        checked++;
        if (position !== expected) {
          problems.push({ period, kind: 'missing', recordId: id, position, message: position > expected ? `positions ${expected}–${position - 1} are missing before record ${id}: deleted records` : `position ${position} appears twice (record ${id})` });
        }
        if (!contentHashOf(rowOfStored(r)).equals(r.content_hash)) {
          problems.push({ period, kind: 'edited', recordId: id, position, message: `record ${id} (position ${position}) does not match its content hash: edited` });
        }
        const link = chainHashOf(previous, id, position, r.content_hash);
        if (!link.equals(r.chain_hash) && position === expected) {
          problems.push({ period, kind: 'chain_broken', recordId: id, position, message: `record ${id} (position ${position}) does not follow the chain: a record was changed or replaced` });
        }
        // Go on from the stored link, so one change is reported once, not at every later record.
        previous = r.chain_hash;
        expected = position + 1;
      }
    }
    if (head) {
      if (Number(head.sealed_count) !== expected - 1) {
        problems.push({ period, kind: 'missing', message: `the month's head counts ${head.sealed_count} sealed records, the chain reaches ${expected - 1}: records deleted` });
      } else if (!head.head_hash.equals(previous)) {
        problems.push({ period, kind: 'head_mismatch', message: `the month's head hash does not match its last record's chain hash` });
      }
    } else if (sealedHere > 0) {
      problems.push({ period, kind: 'head_mismatch', message: `${sealedHere} sealed records but no chain head: the head was deleted` });
    }
    if (head || sealedHere > 0) report.push({ period, sealed: sealedHere, head: head ? head.head_hash.toString('hex') : null });
  }
  // A rewrite that recomputed every chain and head passes the checks above; the heads kept outside do not.
  for (const kept of options.exportedHeads ?? []) {
    const [row] = await sql<{ chain_hash: Buffer }[]>`
      select chain_hash from audit_records where recorded_at >= ${`${kept.period}T00:00:00Z`} and recorded_at < ${nextPeriod(new Date(`${kept.period}T00:00:00Z`), 'month').toISOString()} and seal_seq = ${kept.seal_seq}`;
    if (!row) {
      problems.push({ period: kept.period, kind: 'missing', position: kept.seal_seq, message: `no record at position ${kept.seal_seq}, where an exported chain head points: deleted` });
    } else if (row.chain_hash.toString('hex') !== kept.chain_hash) {
      problems.push({ period: kept.period, kind: 'head_mismatch', position: kept.seal_seq, message: `position ${kept.seal_seq} no longer has the chain hash exported earlier: the chain was rewritten` });
    }
  }
  const now = options.now ?? new Date();
  const [{ unsealed, overdue }] = await sql<{ unsealed: number; overdue: number }[]>`
    select count(*)::int as unsealed, count(*) filter (where recorded_at < ${new Date(now.getTime() - 2 * options.marginSeconds * 1000).toISOString()})::int as overdue
    from audit_records where seal_seq is null`;
  return { ok: problems.length === 0, periods: report, checked, unsealed, overdue, problems };
}
