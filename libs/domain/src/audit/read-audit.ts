import { auditRecords, type Database } from '@lop/db';
import { auditRow, type AuditEntry, type AuditRow } from './record';

export interface ReadAuditWriterOptions {
  /** Rows per INSERT at most (a larger backlog is written in several, one after the other). */
  maxBatch?: number;
  /**
   * NOT FOR PRODUCTION: records nothing, and every read is answered as if its record were written.
   * Only the bench's audit-off measurement sets it (PARTNER_BENCH_UNAUDITED_READS); the config
   * refuses it with a production base URL.
   */
  disabled?: boolean;
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
 * batch, which starts as soon as the previous commit returns: one multi-row INSERT per batch, no
 * timer, so an idle API writes each record at once and a busy one writes hundreds per commit.
 * A failed INSERT rejects every record of its batch, and those reads answer 503 instead of data.
 */
export class ReadAuditWriter {
  private queue: Pending[] = [];
  private flushing = false;
  readonly maxBatch: number;
  readonly disabled: boolean;
  /** Totals since start, for metrics and tests. */
  readonly counts = { written: 0, batches: 0, failed: 0 };

  constructor(
    /** The primary, never a replica. */
    private readonly db: Database,
    options: ReadAuditWriterOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 500;
    this.disabled = options.disabled ?? false;
  }

  /** Resolves when the entry is committed; rejects when it could not be. */
  record(entry: AuditEntry): Promise<void> {
    if (this.disabled) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ row: auditRow(entry), resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          await this.db.insert(auditRecords).values(batch.map((p) => p.row));
          this.counts.written += batch.length;
          this.counts.batches++;
          for (const p of batch) p.resolve();
        } catch (error) {
          this.counts.failed += batch.length;
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
