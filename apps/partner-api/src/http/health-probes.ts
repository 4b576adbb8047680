import { Router } from 'express';
import type { Logger } from 'pino';
import { QUERY_TIMEOUT, schemaVerdict, type DatabaseConnection } from '@lop/db';
import type { ReplicaSet } from '@lop/domain';

/** Why /readyz answers 503 (README § Health probes). */
export type NotReadyReason = 'database_unreachable' | 'database_timeout' | 'database_error' | 'migrating' | 'schema_too_new';

// Reachable but not answering in time: a stalled or overloaded server, or a path that drops packets.
const TIMEOUT_CODES = new Set([QUERY_TIMEOUT, 'CONNECT_TIMEOUT', '57014']);
// Not reachable at all, or the connection went away.
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', '57P01', '57P02', '57P03', '53300']);

function reasonOf(error: unknown): NotReadyReason {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    if (TIMEOUT_CODES.has(code)) return 'database_timeout';
    if (UNREACHABLE_CODES.has(code) || code.startsWith('08')) return 'database_unreachable';
  }
  return 'database_error';
}

/**
 * GET /livez: the process serves HTTP (no database). GET /readyz: it can serve partners: the
 * database answers (within the pool's query timeout) and its schema is one this build serves.
 * With read replicas, /readyz also lists each one's state and lag as last checked; a replica down or
 * lagging never makes the process unready (the primary answers its reads).
 */
export function healthProbes(database: DatabaseConnection, logger: Logger, replicas?: ReplicaSet): Router {
  const router = Router();
  router.get('/livez', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    try {
      // Ready on any schema this build serves: the previous release's, its own, or the next one's
      // (a rolling upgrade runs replicas of two releases on one database).
      const schema = await schemaVerdict(database.sql);
      if (!schema.servable && schema.reason === 'behind') return void res.status(503).json({ status: 'migrating' satisfies NotReadyReason, pending_migrations: schema.missing.length });
      if (!schema.servable) return void res.status(503).json({ status: 'schema_too_new' satisfies NotReadyReason });
      res.json(replicas ? { status: 'ready', replicas: replicas.states().map(replicaReport) } : { status: 'ready' });
    } catch (error) {
      const reason = reasonOf(error);
      if (reason === 'database_error') logger.warn({ err: error }, 'readiness check failed');
      res.status(503).json({ status: reason });
    }
  });
  return router;
}

const replicaReport = (replica: ReturnType<ReplicaSet['states']>[number]) => ({
  name: replica.name,
  state: replica.state,
  ...(replica.lagBytes !== undefined ? { lag_bytes: replica.lagBytes, lag_seconds: replica.lagSeconds, replay_paused: replica.replayPaused } : {}),
  ...(replica.reason ? { reason: replica.reason } : {}),
});
