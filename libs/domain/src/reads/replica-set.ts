import { connectDatabase, readReplicaLag, type ConnectOptions, type Database, type Sql } from '@lop/db';

/**
 * Where a replica-safe read was answered, and why (partner_db_reads_total's `route` label):
 * - `replica`: a replica that had replayed the caller's stream as far as the primary showed it.
 * - `primary_no_replica`: no replica up and within the lag bounds.
 * - `primary_behind_client`: every replica up was behind the caller's own stream (its recent writes,
 *   or events about its orders): read-your-writes.
 * - `primary_after_replica_error`: the replica failed the read (unreachable, cancelled by a recovery
 *   conflict, too slow, or a write on a standby): answered again by the primary.
 * - `primary_after_not_found`: the replica did not have the row; the primary is asked before a 404.
 */
export type ReadRoute = 'replica' | 'primary_no_replica' | 'primary_behind_client' | 'primary_after_replica_error' | 'primary_after_not_found';

export const READ_ROUTES: readonly ReadRoute[] = ['replica', 'primary_no_replica', 'primary_behind_client', 'primary_after_replica_error', 'primary_after_not_found'];

/** What the monitor last knew of one replica (also /readyz's `replicas` and the replica gauges). */
export interface ReplicaState {
  /** host:port/database, never the credentials. */
  name: string;
  /**
   * `up`: answering and within both lag bounds, so it takes reads; `lagging`: answering but beyond a
   * bound (or replay paused that far); `down`: not answering, not a standby, or not yet checked.
   */
  state: 'up' | 'lagging' | 'down';
  lagBytes?: number;
  lagSeconds?: number;
  replayPaused?: boolean;
  /** Why it is down (an error code or sentence), for the operator. */
  reason?: string;
}

export interface Replica {
  readonly name: string;
  readonly db: Database;
  readonly sql: Sql;
}

export interface ReplicaSetOptions {
  urls: string[];
  /** The primary's pool: each replica's lag is measured against its WAL position. */
  primary: Sql;
  maxLagSeconds: number;
  maxLagBytes: number;
  /** Pool size and timeouts of each replica's pool (the API's own bounds). */
  connect: ConnectOptions;
  /** How often each replica is checked; 1 s by default. */
  checkIntervalMs?: number;
}

export function replicaName(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
}

interface Member extends Replica {
  close(): Promise<void>;
  status: ReplicaState;
  /** When the last check answered; a replica not checked successfully for a while is taken for down. */
  checkedAt: number;
}

/**
 * The read replicas of one API process: a small pool to each, and a monitor that checks each one's
 * lag every second (readReplicaLag: the primary's WAL position against the replica's replay
 * position). Only replicas `up` at the last check are offered for reads; a read that finds one
 * unreachable marks it down at once (the next check that answers brings it back).
 */
export class ReplicaSet {
  private readonly members: Member[];
  private readonly interval: NodeJS.Timeout;
  private readonly checkIntervalMs: number;
  private checking?: Promise<void>;
  private next = 0;
  private readonly routes = new Map<ReadRoute, number>();

  constructor(private readonly options: ReplicaSetOptions) {
    this.checkIntervalMs = options.checkIntervalMs ?? 1000;
    this.members = options.urls.map((url) => {
      const connection = connectDatabase(url, options.connect);
      return { name: replicaName(url), db: connection.db, sql: connection.sql, close: connection.close, status: { name: replicaName(url), state: 'down', reason: 'not checked yet' }, checkedAt: 0 };
    });
    this.interval = setInterval(() => void this.check(), this.checkIntervalMs);
    this.interval.unref();
  }

  /** Checks every replica now (also at start, so reads use replicas as soon as one is known to be up). */
  check(): Promise<void> {
    this.checking ??= Promise.all(this.members.map((member) => this.checkOne(member))).then(
      () => void (this.checking = undefined),
      () => void (this.checking = undefined),
    );
    return this.checking;
  }

  private async checkOne(member: Member): Promise<void> {
    try {
      const lag = await readReplicaLag(member.sql, this.options.primary);
      const within = lag.bytes <= this.options.maxLagBytes && lag.seconds <= this.options.maxLagSeconds;
      member.status = { name: member.name, state: within ? 'up' : 'lagging', lagBytes: lag.bytes, lagSeconds: lag.seconds, replayPaused: lag.replayPaused };
      member.checkedAt = Date.now();
    } catch (error) {
      member.status = { name: member.name, state: 'down', reason: reasonOf(error) };
    }
  }

  /**
   * The replicas that may take a read now, starting with the next in turn (reads spread over them).
   * A replica whose last good check is older than three intervals is not offered: its monitor is
   * stuck on a replica that stopped answering.
   */
  candidates(): Replica[] {
    const fresh = Date.now() - 3 * this.checkIntervalMs - 1000;
    const up = this.members.filter((member) => member.status.state === 'up' && member.checkedAt >= fresh);
    if (up.length <= 1) return up;
    const start = this.next++ % up.length;
    return [...up.slice(start), ...up.slice(0, start)];
  }

  /** A read found the replica unreachable: no more reads go to it until a check answers again. */
  markDown(replica: Replica, error: unknown): void {
    const member = this.members.find((m) => m === replica);
    if (member) member.status = { name: member.name, state: 'down', reason: reasonOf(error) };
  }

  /** Counts a replica-safe read by where it was answered (partner_db_reads_total). */
  count(route: ReadRoute): void {
    this.routes.set(route, (this.routes.get(route) ?? 0) + 1);
  }

  /** Replica-safe reads so far by route. */
  readCounts(): ReadonlyMap<ReadRoute, number> {
    return this.routes;
  }

  states(): ReplicaState[] {
    return this.members.map((member) => ({ ...member.status }));
  }

  async close(): Promise<void> {
    clearInterval(this.interval);
    await this.checking;
    await Promise.all(this.members.map((member) => member.close().catch(() => undefined)));
  }
}

function reasonOf(error: unknown): string {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return error instanceof Error ? error.message : String(error);
}
