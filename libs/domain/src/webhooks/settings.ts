import ipaddr from 'ipaddr.js';
import type { Config } from '../config/config';
import type { DeliveryQueueSettings } from './delivery-queue';
import type { DestinationPolicy, ServicePort } from './destination-guard';
import type { RetryPolicy } from './retry-policy';

/** The webhook settings of a configuration, in the shapes the modules take. */
export interface WebhookSettings {
  policy: RetryPolicy;
  queue: DeliveryQueueSettings;
  attemptTimeoutMs: number;
  /** What registration and every delivery attempt allow as a destination. */
  destination: DestinationPolicy;
  concurrency: number;
  /** Attempts one API client is entitled to in flight per environment and worker process while others wait; also the reserve borrowing leaves. */
  clientConcurrency: number;
  /** Seconds between a worker's passes over held deliveries (resumeHeldDeliveries). */
  heldRecheckSeconds: number;
}

/**
 * `databaseUrl` is the database this process actually uses when it differs from DATABASE_URL
 * (the embedded server's URL), so its port is refused too.
 */
export function webhookSettings(config: Config, databaseUrl?: string): WebhookSettings {
  return {
    policy: { delaysSeconds: config.PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS, retryAfterMaxSeconds: config.PARTNER_WEBHOOK_RETRY_AFTER_MAX_SECONDS },
    queue: {
      attemptTimeoutSeconds: config.PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS,
      pollIntervalSeconds: config.PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS,
      historyRetentionSeconds: Math.round(config.PARTNER_WEBHOOK_RETENTION_DAYS * 86_400),
    },
    attemptTimeoutMs: Math.round(config.PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS * 1000),
    destination: { allowLoopback: config.PARTNER_WEBHOOKS_ALLOW_LOOPBACK, servicePorts: servicePorts(config, databaseUrl) },
    concurrency: config.PARTNER_WEBHOOK_CONCURRENCY,
    clientConcurrency: config.PARTNER_WEBHOOK_CLIENT_CONCURRENCY,
    heldRecheckSeconds: config.PARTNER_WEBHOOK_HELD_RECHECK_SECONDS,
  };
}

/** Logged at warn level by every process that starts with the loopback allowance on. */
export const LOOPBACK_ALLOWANCE_WARNING =
  'PARTNER_WEBHOOKS_ALLOW_LOOPBACK=true: sandbox webhook subscriptions may deliver to http://127.0.0.1:<port> and http://localhost:<port>. For local development only; never enable it on a shared or production deployment.';

const POSTGRES_DEFAULT_PORT = 5432;

function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (!ipaddr.isValid(bare)) return false;
  // 0.0.0.0 and :: reach this machine when connected to.
  return ['loopback', 'unspecified'].includes(ipaddr.process(bare).range());
}

/**
 * Loopback ports of DATABASE_URL. postgres.js accepts several comma-separated hosts, which WHATWG
 * URL cannot parse, so the authority is split by hand; a unix-socket URL has no port to guard.
 */
function databasePorts(databaseUrl: string | undefined): number[] {
  const authority = databaseUrl?.match(/^[a-z]+:\/\/(?:[^@/?#]*@)?([^/?#]*)/i)?.[1];
  if (!authority) return [];
  const ports: number[] = [];
  for (const hostPort of authority.split(',')) {
    const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(hostPort);
    if (!match || !match[1] || !isLoopbackHost(decodeURIComponent(match[1]))) continue;
    ports.push(match[2] ? Number(match[2]) : POSTGRES_DEFAULT_PORT);
  }
  return ports;
}

/**
 * The ports of this service on this machine, which the loopback allowance must never reach: a
 * sandbox subscription to one of them would make the worker POST signed bodies at the service's
 * own API, its metrics, or its database. Port 0 (off, or "any free port") names nothing.
 */
export function servicePorts(config: Config, databaseUrl?: string): ServicePort[] {
  const candidates: ServicePort[] = [
    { port: config.PORT, role: 'partner API (PORT)' },
    { port: config.PARTNER_METRICS_PORT, role: 'metrics endpoint (PARTNER_METRICS_PORT)' },
    { port: config.PARTNER_WORKER_METRICS_PORT, role: "delivery worker's metrics endpoint (PARTNER_WORKER_METRICS_PORT)" },
    { port: config.PARTNER_EMBEDDED_PG_PORT, role: 'embedded PostgreSQL (PARTNER_EMBEDDED_PG_PORT)' },
    ...databasePorts(config.DATABASE_URL).map((port) => ({ port, role: 'database (DATABASE_URL)' })),
    ...databasePorts(databaseUrl).map((port) => ({ port, role: 'database' })),
  ];
  const seen = new Set<number>();
  return candidates.filter((p) => p.port > 0 && !seen.has(p.port) && seen.add(p.port));
}
