import type { NextFunction, Request, Response } from 'express';
import { rateLimit, type ClientRateLimitInfo, type Options, type Store } from 'express-rate-limit';
import type { Sql } from '@lop/db';
import { PartnerError, type RateLimitPolicy } from '@lop/domain';

/**
 * Fixed-window counters in PostgreSQL, so every replica shares one budget per (API client, environment).
 * express-rate-limit owns the semantics and the RateLimit-* / Retry-After headers. Counters of
 * ended windows are removed by the scheduled retention pass (libs/domain/src/retention), never
 * on a request's path.
 */
export class PostgresRateLimitStore implements Store {
  private windowSeconds = 60;
  private limit: number | undefined;
  /**
   * Budgets spent in their current window, by key: refused here until the window ends, without a
   * write. A flooding client's refusals otherwise each commit an increment of the same counter
   * row, and a thousand such commits a second slow every other client's writes and reads.
   */
  private readonly spent = new Map<string, ClientRateLimitInfo>();

  constructor(private readonly sql: Sql) {}

  init(options: Options): void {
    this.windowSeconds = Math.max(1, Math.round(options.windowMs / 1000));
    this.limit = typeof options.limit === 'number' ? options.limit : undefined;
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const spent = this.spent.get(key);
    if (spent && spent.resetTime!.getTime() > Date.now()) return { totalHits: ++spent.totalHits, resetTime: spent.resetTime };
    if (spent) this.spent.delete(key);
    const info = await this.incrementRow(key);
    if (this.limit !== undefined && info.totalHits > this.limit) {
      for (const [k, v] of this.spent) if (v.resetTime!.getTime() <= Date.now()) this.spent.delete(k);
      this.spent.set(key, info);
    }
    return info;
  }

  private async incrementRow(key: string): Promise<ClientRateLimitInfo> {
    // One counter row takes every write of a (client, environment, budget): a commit that waited
    // for its WAL to reach disk held that row for the flush, and on a loaded disk concurrent
    // writes of the client queued behind it past lock_timeout (a 503). This statement's own
    // transaction commits asynchronously (set_config local: it lasts until that commit), so the
    // lock is released at once; a crash may forget the last fraction of a second of counts, which
    // only lets the client spend a few more calls that minute. Epoch seconds, not a timestamp:
    // drizzle's driver setup leaves timestamps as strings.
    const [row] = await this.sql<{ count: number; window_epoch: number }[]>`
      insert into rate_limit_counters (subject, window_start, count)
      select ${key}, to_timestamp(floor(extract(epoch from now()) / ${this.windowSeconds}) * ${this.windowSeconds}), 1
      from (select set_config('synchronous_commit', 'off', true)) as asynchronous_commit
      on conflict (subject, window_start) do update set count = rate_limit_counters.count + 1
      returning count, extract(epoch from window_start)::float8 as window_epoch`;
    return { totalHits: row.count, resetTime: new Date((row.window_epoch + this.windowSeconds) * 1000) };
  }

  async decrement(key: string): Promise<void> {
    await this.sql`
      update rate_limit_counters set count = greatest(count - 1, 0)
      where subject = ${key} and window_start = to_timestamp(floor(extract(epoch from now()) / ${this.windowSeconds}) * ${this.windowSeconds})`;
  }

  async resetKey(key: string): Promise<void> {
    await this.sql`delete from rate_limit_counters where subject = ${key}`;
  }
}

const kSubject = Symbol('rateLimitSubject');

/** What a 429 says ran out, per budget. */
const REFUSALS: Record<RateLimitPolicy, string> = {
  create_order: 'Too many order creations for this API client and environment',
  webhook_operations: 'Too many webhook operations (test sends, resends, retries, recoveries, endpoint creations) for this API client in this environment',
};
type WithSubject = Request & { [kSubject]?: string };

/**
 * The transport half of the core's rate limit (libs/domain guard.ts decides when a call
 * spends, and from which (client, environment)'s budget): express-rate-limit counts in PostgreSQL and writes the
 * RateLimit-* headers, Retry-After and the 429 on whichever door the call came through.
 */
export function rateLimitSpender(sql: Sql, limits: Record<RateLimitPolicy, number>) {
  const limiters = Object.fromEntries(
    (Object.entries(limits) as [RateLimitPolicy, number][]).map(([policy, limitPerMinute]) => [
      policy,
      rateLimit({
        windowMs: 60_000,
        limit: limitPerMinute,
        standardHeaders: 'draft-6',
        legacyHeaders: false,
        store: new PostgresRateLimitStore(sql),
        keyGenerator: (req) => `${policy}:${(req as WithSubject)[kSubject]}`,
        handler: (req: Request, _res: Response, next: NextFunction) => {
          const resetTime = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
          const retryAfter = Math.max(1, Math.ceil(((resetTime?.getTime() ?? Date.now() + 60_000) - Date.now()) / 1000));
          next(new PartnerError('rate_limited', `${REFUSALS[policy]}; retry after ${retryAfter} seconds.`, { headers: { 'Retry-After': String(retryAfter) } }));
        },
        validate: { xForwardedForHeader: false, keyGeneratorIpFallback: false },
      }),
    ]),
  ) as Record<RateLimitPolicy, ReturnType<typeof rateLimit>>;

  return (req: Request, res: Response) =>
    (policy: RateLimitPolicy, subject: string) =>
      new Promise<void>((resolve, reject) => {
        (req as WithSubject)[kSubject] = subject;
        void limiters[policy](req, res, (error?: unknown) => (error ? reject(error) : resolve()));
      });
}
