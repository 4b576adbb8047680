import type { Sql } from '@lop/db';
import { auditRow, type AuditEntry, type AuditRow } from './record';

export interface ReadAuditWriterOptions {
  /** Rows per INSERT at most (a larger backlog is written in several). */
  maxBatch?: number;
  /**
   * Batches being committed at once (default 2): a record that arrives while one commits starts the
   * next at once instead of waiting for it, so a read waits about one commit, not one and a half.
   */
  maxInFlight?: number;
  /**
   * NOT FOR PRODUCTION: records nothing, and every read is answered as if its record were written.
   * Only the bench's audit-off measurement sets it (PARTNER_BENCH_UNAUDITED_READS); the config
   * refuses it with a production base URL.
   */
  disabled?: boolean;
}

/**
 * One INSERT of any number of rows with one fixed statement (the rows as one JSON parameter):
 * prepared once per connection, no per-row SQL to build. The query builder's multi-row VALUES cost
 * the API about 1 ms of CPU per audited read in the bench, a new statement for every batch size.
 */
async function insertRows(sql: Sql, rows: AuditRow[]): Promise<void> {
  const json = JSON.stringify(
    rows.map((r) => ({
      recorded_at: r.recordedAt.toISOString(),
      kind: r.kind,
      laboratory_id: r.laboratoryId,
      client_id: r.clientId,
      environment: r.environment,
      key_id: r.keyId,
      actor: r.actor,
      action: r.action,
      door: r.door,
      route: r.route,
      status: r.status,
      request_id: r.requestId,
      order_id: r.orderId,
      resource_id: r.resourceId,
      details: r.details,
      content_hash: `\\x${r.contentHash.toString('hex')}`,
    })),
  );
  await sql`
    insert into audit_records (recorded_at, kind, laboratory_id, client_id, environment, key_id, actor, action, door, route, status, request_id, order_id, resource_id, details, content_hash)
    select recorded_at, kind, laboratory_id, client_id, environment, key_id, actor, action, door, route, status, request_id, order_id, resource_id, details, content_hash
    from json_populate_recordset(null::audit_records, ${json}::json)`;
}

/** audit_records exists (migration 0029). */
export async function auditTableExists(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ exists: boolean }[]>`select to_regclass('audit_records') is not null as exists`;
  return row.exists;
}

interface Pending {
  row: AuditRow;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * The audit records of partner reads, written by group commit on the primary: `record()` resolves
 * once the record is committed, and the read's response waits for it (trpc.ts), so a read is
 * answered only when its record is durable. Records arriving while a batch commits form the next
 * batch, which starts as soon as a commit returns (or at once while fewer than maxInFlight are
 * committing): one multi-row INSERT per batch, no timer, so an idle API writes each record at once
 * and a busy one writes hundreds per commit.
 * A failed INSERT rejects every record of its batch, and those reads answer 503 instead of data.
 */
export class ReadAuditWriter {
  private queue: Pending[] = [];
  private inFlight = 0;
  readonly maxBatch: number;
  readonly maxInFlight: number;
  readonly disabled: boolean;
  /** Totals since start, for metrics and tests (`beforeSchema`: reads answered on a schema without the table). */
  readonly counts = { written: 0, batches: 0, failed: 0, beforeSchema: 0 };
  private schema: { ready: boolean; checkedAt: number; checking?: Promise<boolean> } = { ready: false, checkedAt: 0 };

  constructor(
    /** The primary, never a replica. */
    private readonly sql: Sql,
    options: ReadAuditWriterOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 500;
    this.maxInFlight = options.maxInFlight ?? 2;
    this.disabled = options.disabled ?? false;
  }

  /** Resolves when the entry is committed; rejects when it could not be. */
  async record(entry: AuditEntry): Promise<void> {
    if (this.disabled) return;
    if (!this.schema.ready && !(await this.schemaReady())) {
      this.counts.beforeSchema++;
      return;
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ row: auditRow(entry), resolve, reject });
      if (this.inFlight < this.maxInFlight) void this.flush();
    });
  }

  /**
   * Whether the schema has the trail (migration 0029). This release serves the schema before its
   * migrations (docs/migrations.md), where there is no trail to write to: reads are answered
   * unrecorded until the table exists (looked for at most every 5 s), and recorded from then on.
   * Only the table's absence is exempt: once it exists, a failed write answers 503.
   */
  private async schemaReady(): Promise<boolean> {
    if (this.schema.checking) return this.schema.checking;
    if (Date.now() - this.schema.checkedAt < 5_000) return false;
    this.schema.checking = auditTableExists(this.sql)
      .then((ready) => (this.schema.ready = ready))
      .catch(() => false)
      .finally(() => {
        this.schema.checkedAt = Date.now();
        this.schema.checking = undefined;
      });
    return this.schema.checking;
  }

  /** Writes what is queued, batch after batch, until nothing is left; at most maxInFlight of these run. */
  private async flush(): Promise<void> {
    this.inFlight++;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          await insertRows(this.sql, batch.map((p) => p.row));
          this.counts.written += batch.length;
          this.counts.batches++;
          for (const p of batch) p.resolve();
        } catch (error) {
          this.counts.failed += batch.length;
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      this.inFlight--;
    }
  }
}
