import { Socket } from 'node:net';
import type postgres from 'postgres';

/**
 * Client-side bounds for a postgres.js pool. A stalled server (SIGSTOP, a hung host, a network path
 * that silently drops packets) never fires its own statement_timeout, and postgres.js 3.4.9 waits for
 * an answer forever on a connection that is already open (porsager/postgres#1089); TCP keepalive does
 * not help while the peer's kernel still acknowledges. So:
 *
 *  - every query has a deadline from the moment it is dispatched (waiting for a pooled connection
 *    included); past it the query fails with QUERY_TIMEOUT, which callers answer as 503;
 *  - a transaction fails as a whole when one of its statements, its BEGIN, or its COMMIT/ROLLBACK
 *    misses the deadline, and its callback is never started (or continued) afterwards: a request
 *    already answered 503 must not write later;
 *  - a missed deadline means the server is not answering, so every pooled connection that stays
 *    silent for a short grace period afterwards is closed. postgres.js rejects what was queued on
 *    it, the server rolls back an open transaction when it sees the disconnect, and the next query
 *    opens a fresh connection (bounded by connect_timeout). Connections that are still answering
 *    (a partial failure) are left alone;
 *  - after a missed deadline or a failed connection attempt, until the server answers anything
 *    again, one query at a time probes it and the others fail at once with the reason: a request's
 *    follow-up work after a timeout (cleanup, a second statement) must not wait out a deadline of
 *    its own, and the pool must not pile up work (postgres.js serves its queue one connection
 *    attempt per query) for a server that is not there.
 *
 * Relies on postgres.js 3.4.9 internals, checked by query-timeouts.test.ts: a Query is dispatched
 * by calling its own `handler` property, and settled through its own `reject` property.
 */

export const QUERY_TIMEOUT = 'QUERY_TIMEOUT';

export class QueryTimeoutError extends Error {
  override name = 'QueryTimeoutError';
  readonly code = QUERY_TIMEOUT;
  constructor(ms: number) {
    super(`the database did not answer within ${ms} ms`);
  }
}

/**
 * Failing at once while the server is not answering: carries the code of the failure that made
 * it so (QUERY_TIMEOUT for a stall, ECONNREFUSED when connections are refused, …), so callers and
 * /readyz tell the cases apart.
 */
export class DatabaseNotAnsweringError extends Error {
  override name = 'DatabaseNotAnsweringError';
  constructor(
    readonly code: string,
    cause: unknown,
  ) {
    super(`the database is not answering (${code}); queries fail at once until it answers again`, { cause });
  }
}

/** The server answered, even if with an error (a statement timeout, a constraint): it is not stalled. */
const isAnswer = (error: unknown) => (error as { name?: unknown })?.name === 'PostgresError';
// Connecting failed: the server is not there to answer (refused, unknown, unreachable, or no
// startup answer within connect_timeout). Not closed connections: the sweep itself causes them.
const CONNECTION_FAILURES = new Set(['CONNECT_TIMEOUT', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const CLOSED = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED']);
const codeOf = (error: unknown) => (error as { code?: unknown })?.code as string;

interface PendingQuery extends Promise<unknown> {
  handler: ((query: PendingQuery) => void) & { debug?: unknown };
  reject: (error: unknown) => void;
  /** Set by postgres.js once the query is written to a connection. */
  state: unknown;
}

const isQuery = (value: unknown): value is PendingQuery =>
  value instanceof Promise && typeof (value as Partial<PendingQuery>).handler === 'function' && typeof (value as Partial<PendingQuery>).reject === 'function';

/** Sockets of one pool, and closing the silent ones after a missed deadline. */
class StalledConnectionSweeper {
  private readonly sockets = new Set<Socket>();
  private sweeping = false;
  constructor(private readonly graceMs: number) {}

  /**
   * postgres.js's `socket` option: it then skips its own connect and expects a connecting socket.
   * Host rotation and the unix-socket path follow what postgres.js does itself.
   */
  readonly socketFactory = (() => {
    let next = 0;
    return (options: { host: string[]; port: number[]; path?: string | false }): Socket => {
      const socket = new Socket();
      if (options.path) socket.connect(options.path);
      else {
        const i = next++ % options.host.length;
        socket.connect(options.port[i], options.host[i]);
        // Read by postgres.js for TLS server names and error messages.
        Object.assign(socket, { host: options.host[i], port: options.port[i] });
      }
      // No 'close' listener: postgres.js removes all of them when it upgrades to TLS.
      for (const known of this.sockets) if (known.destroyed) this.sockets.delete(known);
      this.sockets.add(socket);
      return socket;
    };
  })();

  /**
   * A deadline was missed. Byte counters (which keep counting under TLS) show which connections
   * are silent; one still in its startup (nothing read yet) is connect_timeout's to bound.
   */
  suspect(): void {
    if (this.sweeping) return;
    this.sweeping = true;
    const before = new Map<Socket, number>();
    for (const socket of this.sockets) {
      if (socket.destroyed) this.sockets.delete(socket);
      else if (!socket.connecting && socket.bytesRead > 0) before.set(socket, socket.bytesRead);
    }
    setTimeout(() => {
      this.sweeping = false;
      for (const [socket, bytesRead] of before) {
        if (!socket.destroyed && socket.bytesRead === bytesRead) socket.resetAndDestroy();
      }
    }, this.graceMs).unref();
  }
}

/** One transaction (or savepoint): failed as soon as one of its deadlines is missed. */
interface TransactionGuard {
  error: Error | null;
  fail(error: Error): void;
}

export interface QueryDeadlines {
  /** The pool, every query and transaction bounded. */
  guard(sql: postgres.Sql): postgres.Sql;
  /** postgres.js `socket` option, so stalled connections can be closed. */
  socket: StalledConnectionSweeper['socketFactory'];
}

export function queryDeadlines(timeoutMs: number): QueryDeadlines {
  // Long enough for a busy connection to show a byte, short against the deadline.
  const sweeper = new StalledConnectionSweeper(Math.min(1_000, Math.max(100, timeoutMs / 4)));
  const server = {
    stalled: false,
    probing: false,
    failure: new QueryTimeoutError(timeoutMs) as Error,
    /** A deadline passed; `sent`: the query was on a connection, not still waiting for one. */
    missed(error: QueryTimeoutError, sent: boolean) {
      server.stalled = true;
      // Waiting for a connection while connecting fails says nothing new: keep that reason.
      if (sent || !CONNECTION_FAILURES.has(codeOf(server.failure))) server.failure = error;
      sweeper.suspect();
    },
    notAnswering: () => new DatabaseNotAnsweringError(codeOf(server.failure) ?? QUERY_TIMEOUT, server.failure),
    /** For work entering the pool: the error to fail with now, or null (`probe` set when it is the one probing). */
    admit(entry: { probe: boolean }): Error | null {
      if (!server.stalled) return null;
      if (server.probing) return server.notAnswering();
      server.probing = entry.probe = true;
      return null;
    },
    settled(entry: { probe: boolean }, outcome: { answered: true } | { answered: false; error?: unknown }) {
      if (entry.probe) server.probing = entry.probe = false;
      if (outcome.answered) server.stalled = false;
      else if (CONNECTION_FAILURES.has(codeOf(outcome.error)) && !(outcome.error instanceof DatabaseNotAnsweringError)) {
        // Connecting failed: fail fast from now on too, for the same reason.
        server.stalled = true;
        server.failure = outcome.error as Error;
      }
    },
  };

  const bound = (query: PendingQuery, transaction: TransactionGuard | undefined): PendingQuery => {
    const dispatch = query.handler;
    const reject = query.reject;
    // While the server is not answering, a closed connection is most likely the sweep's doing:
    // say what is actually wrong.
    query.reject = (error: unknown) =>
      reject(server.stalled && CLOSED.has(codeOf(error)) ? server.notAnswering() : error);
    const handler = (q: PendingQuery) => {
      if (transaction?.error) return q.reject(transaction.error);
      // A transaction's own statements run on the connection it already holds.
      const entry = { probe: false };
      const refused = transaction ? null : server.admit(entry);
      if (refused) return q.reject(refused);
      const timer = setTimeout(() => {
        const error = new QueryTimeoutError(timeoutMs);
        server.missed(error, q.state != null);
        q.reject(error);
        transaction?.fail(error);
      }, timeoutMs);
      // Promise's own then: the Query's would dispatch it again.
      Promise.prototype.then.call(
        q,
        () => (clearTimeout(timer), server.settled(entry, { answered: true })),
        (error: unknown) => (clearTimeout(timer), server.settled(entry, isAnswer(error) ? { answered: true } : { answered: false, error })),
      );
      dispatch(q);
    };
    handler.debug = dispatch.debug;
    query.handler = handler;
    return query;
  };

  const transactionOf = (target: postgres.Sql | postgres.TransactionSql, method: 'begin' | 'savepoint', args: unknown[], parent: TransactionGuard | undefined) => {
    const callback = args.pop() as (tx: postgres.TransactionSql) => unknown;
    const entry = { probe: false };
    const refused = parent ? null : server.admit(entry);
    if (refused) return Promise.reject(refused);
    let phase: NodeJS.Timeout | undefined;
    let failed!: (error: Error) => void;
    const failure = new Promise<never>((_, reject) => (failed = reject));
    failure.catch(() => undefined);
    const guard: TransactionGuard = {
      error: null,
      fail: (error) => {
        if (guard.error) return;
        guard.error = error;
        clearTimeout(phase);
        parent?.fail(error);
        failed(error);
      },
    };
    // BEGIN (or SAVEPOINT) and COMMIT/ROLLBACK are issued by postgres.js itself, outside `bound`.
    let over = false;
    // `sent`: COMMIT/ROLLBACK go to the connection the transaction holds; BEGIN may still wait for one.
    const startPhase = (sent: boolean) => {
      clearTimeout(phase);
      // Settled already (its connection closed under a callback that went on): nothing left to bound.
      if (over) return;
      phase = setTimeout(() => {
        const error = new QueryTimeoutError(timeoutMs);
        server.missed(error, sent);
        guard.fail(error);
      }, timeoutMs);
    };
    startPhase(false);
    const run = ((target as unknown as Record<typeof method, (...a: unknown[]) => Promise<unknown>>)[method])(...args, async (tx: postgres.TransactionSql) => {
      clearTimeout(phase);
      if (guard.error) throw guard.error;
      server.settled(entry, { answered: true }); // BEGIN was answered
      let result: unknown;
      try {
        result = await callback(guarded(tx, guard) as postgres.TransactionSql);
      } catch (error) {
        if (guard.error) throw guard.error;
        startPhase(true); // the ROLLBACK
        throw error;
      }
      if (guard.error) throw guard.error;
      startPhase(true); // the COMMIT
      return result;
    });
    run.catch((error: unknown) => server.settled(entry, { answered: isAnswer(error), error }));
    return Promise.race([run, failure]).finally(() => {
      over = true;
      clearTimeout(phase);
      server.settled(entry, { answered: false });
    });
  };

  const guarded = <S extends postgres.Sql | postgres.TransactionSql>(sql: S, transaction: TransactionGuard | undefined): S => {
    // Made once per pool or transaction, not on every read of `unsafe` (one per drizzle statement).
    const boundCall = (method: unknown) => (...args: unknown[]) => {
      const result: unknown = (method as (...a: unknown[]) => unknown).apply(sql, args);
      return isQuery(result) ? bound(result, transaction) : result;
    };
    let unsafe: ((...args: unknown[]) => unknown) | undefined;
    let file: ((...args: unknown[]) => unknown) | undefined;
    return new Proxy(sql, {
      apply(target, thisArg, args) {
        const result: unknown = Reflect.apply(target, thisArg, args);
        return isQuery(result) ? bound(result, transaction) : result;
      },
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        switch (property) {
          case 'unsafe':
            return (unsafe ??= boundCall(value));
          case 'file':
            return (file ??= boundCall(value));
          case 'begin':
          case 'savepoint':
            return (...args: unknown[]) => transactionOf(target, property, args, transaction);
          default:
            return value;
        }
      },
    });
  };

  return { guard: (sql) => guarded(sql, undefined), socket: sweeper.socketFactory };
}
