import { AsyncLocalStorage } from 'node:async_hooks';
import { sql as statement } from 'drizzle-orm';
import type { Sql } from 'postgres';
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';

// client.ts's Database and Transaction, spelled here: client.ts wraps its database with this module.
type Database = PostgresJsDatabase;
type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/**
 * Notifications sent once a transaction has committed, from the pool, in a statement of their own.
 *
 * A NOTIFY inside a transaction costs every transaction that sends one: PostgreSQL holds one
 * cluster-wide lock from its pre-commit to the end of its commit, WAL flush included, so such
 * commits are flushed one at a time across all sessions instead of sharing flushes (group commit).
 * Measured with pgbench on the development machine (8 clients, each appending to its own stream):
 * 6,400 transactions/s without a NOTIFY, 3,700 with one inside, 5,200 with a `pg_notify` right
 * after the commit (its statement writes no WAL, so the lock is held only for the queue write).
 */
interface Pending {
  /** `channel\0payload`: each sent once however often it was asked for (as PostgreSQL folds them). */
  notifications: Set<string>;
}

const scope = new AsyncLocalStorage<Pending>();

/**
 * Makes `db.transaction` send, after the transaction commits, what notifyAfterCommit was asked for
 * inside it; nothing when it rolls back. A savepoint (`tx.transaction`) belongs to its transaction:
 * only the outer commit makes anything visible.
 */
export function sendNotificationsAfterCommit(db: Database, sql: Sql): Database {
  const transaction = db.transaction.bind(db);
  db.transaction = (async (work, config) => {
    const pending: Pending = { notifications: new Set() };
    const result = await scope.run(pending, () => transaction(work, config));
    if (pending.notifications.size > 0) {
      const [channels, payloads] = [...pending.notifications].reduce<[string[], string[]]>(
        (lists, key) => {
          const [channel, payload] = key.split('\0');
          lists[0].push(channel);
          lists[1].push(payload);
          return lists;
        },
        [[], []],
      );
      // Committed already: a failure here (the server just went away) costs a listener only its
      // wake-up, which its deadline covers. The transaction's outcome stands.
      await sql`select pg_notify(channel, payload) from unnest(${channels}::text[], ${payloads}::text[]) as n(channel, payload)`.catch(() => undefined);
    }
    return result;
  }) as Database['transaction'];
  return db;
}

/**
 * Notifies `channel` with `payload` once `tx` commits: after the commit when `tx` belongs to a
 * transaction of connectDatabase's `db` (sendNotificationsAfterCommit), else inside it (a NOTIFY,
 * which PostgreSQL also delivers only at commit).
 */
export async function notifyAfterCommit(tx: Transaction, channel: string, payload: string): Promise<void> {
  const pending = scope.getStore();
  if (pending) pending.notifications.add(`${channel}\0${payload}`);
  else await tx.execute(statement`select pg_notify(${channel}, ${payload})`);
}
