import postgres from 'postgres';

/** Lock modes that stop partners' writes (ShareLock and above) or reads (AccessExclusiveLock) on a table. */
const BLOCKING_MODES = new Set(['ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock']);
const QUERY_MODES = new Set(['AccessShareLock', 'RowShareLock', 'RowExclusiveLock']);

export interface LockSpan {
  relation: string;
  mode: string;
  /** Who held it (pg_stat_activity.application_name). */
  holder: string;
  ms: number;
}

export interface LockSample {
  samples: number;
  /** The longest continuous hold of a blocking lock on a table of the public schema, by one backend. */
  longestBlocking: LockSpan | undefined;
  /** The longest continuous hold of any table lock but the ones every query takes (AccessShareLock, RowShareLock, RowExclusiveLock): e.g. a concurrent index build's ShareUpdateExclusiveLock. */
  longestHeld: LockSpan | undefined;
  /** The longest wait of any backend for a table lock (not granted), whatever the mode. */
  longestWait: LockSpan | undefined;
  stop(): Promise<void>;
}

/**
 * Samples pg_locks every `intervalMs` in the database of `url`, and measures how long each
 * (backend, table, mode) was continuously seen: held when granted, waited for when not. A span
 * shorter than the interval may be missed; a longer one is measured to within an interval.
 */
export function sampleLocks(url: string, intervalMs = 25): LockSample {
  const sql = postgres(url, { max: 1, onnotice: () => undefined, connection: { application_name: 'upgrade-lock-sampler' } });
  const open = new Map<string, { since: number; last: number; span: Omit<LockSpan, 'ms'>; granted: boolean }>();
  const result: LockSample = { samples: 0, longestBlocking: undefined, longestHeld: undefined, longestWait: undefined, stop: async () => undefined };
  const close = (entry: { since: number; last: number; span: Omit<LockSpan, 'ms'>; granted: boolean }) => {
    // First seen to last seen, plus one interval: it began up to one interval before it was first seen.
    const span = { ...entry.span, ms: entry.last - entry.since + intervalMs };
    if (entry.granted && BLOCKING_MODES.has(span.mode) && span.ms > (result.longestBlocking?.ms ?? -1)) result.longestBlocking = span;
    if (entry.granted && !QUERY_MODES.has(span.mode) && span.ms > (result.longestHeld?.ms ?? -1)) result.longestHeld = span;
    if (!entry.granted && span.ms > (result.longestWait?.ms ?? -1)) result.longestWait = span;
  };
  let running = true;
  const loop = (async () => {
    while (running) {
      const now = Date.now();
      const rows = await sql<{ pid: number; relation: string; mode: string; granted: boolean; holder: string }[]>`
        select l.pid, c.relname as relation, l.mode, l.granted, coalesce(a.application_name, '') as holder
        from pg_locks l
        join pg_class c on c.oid = l.relation
        join pg_namespace n on n.oid = c.relnamespace and n.nspname = 'public'
        left join pg_stat_activity a on a.pid = l.pid
        where l.locktype = 'relation' and l.database = (select oid from pg_database where datname = current_database()) and l.pid <> pg_backend_pid()
          and c.relkind in ('r', 'p')`.catch(() => []);
      result.samples += 1;
      const seen = new Set<string>();
      for (const row of rows) {
        const key = `${row.pid}/${row.relation}/${row.mode}/${row.granted}`;
        seen.add(key);
        const entry = open.get(key);
        if (entry) entry.last = now;
        else open.set(key, { since: now, last: now, granted: row.granted, span: { relation: row.relation, mode: row.mode, holder: row.holder } });
      }
      for (const [key, entry] of open) {
        if (seen.has(key)) continue;
        close(entry);
        open.delete(key);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, intervalMs - (Date.now() - now))));
    }
  })();
  result.stop = async () => {
    running = false;
    await loop;
    for (const entry of open.values()) close(entry);
    await sql.end({ timeout: 5 });
  };
  return result;
}
