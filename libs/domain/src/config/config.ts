import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** The repository root; the embedded database keeps its data folder below it. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

const booleanText = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const optionalUrl = z.url().optional();

const configSchema = z.object({
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PARTNER_DATA_DIR: z.string().default(resolve(PROJECT_ROOT, '.data')),
  PARTNER_EMBEDDED_PG_PORT: z.coerce.number().int().min(1024).max(65535).default(54329),
  PARTNER_SANDBOX_BASE_URL: optionalUrl,
  PARTNER_PRODUCTION_BASE_URL: optionalUrl,
  PARTNER_DB_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  PARTNER_WEBHOOKS_ALLOW_LOOPBACK: booleanText.default(false),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads configuration from the environment; a bad value is one clear line, and the process stops. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`invalid configuration: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}
