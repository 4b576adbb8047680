import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { rateLimit, type ClientRateLimitInfo, type Options, type Store } from 'express-rate-limit';
import type { Logger } from 'pino';
import type { Sql } from '@lop/db';
import { PartnerError } from '@lop/domain';
import { sendError } from './send-error';

/**
 * Fixed-window counters in PostgreSQL, so every replica shares one budget per API key.
 * express-rate-limit owns the semantics and the RateLimit-* / Retry-After headers.
 */
export class PostgresRateLimitStore implements Store {
  private windowSeconds = 60;

  constructor(private readonly sql: Sql) {}

  init(options: Options): void {
    this.windowSeconds = Math.max(1, Math.round(options.windowMs / 1000));
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    // Epoch seconds, not a timestamp: drizzle's driver setup leaves timestamps as strings.
    const [row] = await this.sql<{ count: number; window_epoch: number }[]>`
      insert into rate_limit_counters (subject, window_start, count)
      values (${key}, to_timestamp(floor(extract(epoch from now()) / ${this.windowSeconds}) * ${this.windowSeconds}), 1)
      on conflict (subject, window_start) do update set count = rate_limit_counters.count + 1
      returning count, extract(epoch from window_start)::float8 as window_epoch`;
    // Expired windows are cleared now and then, off the caller's critical path.
    if (Math.random() < 0.01) void this.sql`delete from rate_limit_counters where window_start < now() - interval '1 hour'`.catch(() => undefined);
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

/** Per-key limit on order creation: 429 `rate_limited` with Retry-After, RateLimit-* headers on every create. */
export function createOrderRateLimit(sql: Sql, limitPerMinute: number, logger: Logger) {
  return rateLimit({
    windowMs: 60_000,
    limit: limitPerMinute,
    standardHeaders: 'draft-6',
    legacyHeaders: false,
    store: new PostgresRateLimitStore(sql),
    // Unauthenticated calls are answered 401 by the procedure; they spend no one's budget.
    skip: (req) => !req.headers.authorization,
    keyGenerator: (req) => `create_order:${createHash('sha256').update(req.headers.authorization ?? '').digest('hex')}`,
    handler: (req: Request, res: Response) => {
      const resetTime = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfter = Math.max(1, Math.ceil(((resetTime?.getTime() ?? Date.now() + 60_000) - Date.now()) / 1000));
      sendError(res, new PartnerError('rate_limited', `Too many order creations for this API key; retry after ${retryAfter} seconds.`, { headers: { 'Retry-After': String(retryAfter) } }), logger);
    },
    validate: { xForwardedForHeader: false, keyGeneratorIpFallback: false },
  });
}
