import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PARTNER_BASE_PATH, type Scope, SCOPES } from '@lop/contract';
import { inject } from 'vitest';
import type { Page } from 'playwright-core';
import { connectDatabase, createTestDatabase, freePort, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { startDeliveryWorker, type RunningDeliveryWorker } from '@lop/delivery-worker';
import { createClient, createKey, grantPrograms, loadConfig, seedDemo, type Config } from '@lop/domain';
import { createLogger, startPartnerApi, type RunningApi } from '@lop/partner-api';
import { ensureConsoleBuilt } from '../ensure-built';
import { ARTIFACTS, openBrowser, type Browser } from './browser';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * One browser test file's world: the demo laboratory, an API client of its own (so files that
 * run side by side never see each other's orders, events or webhooks), the partner API serving
 * the built console, optionally the delivery worker, and a headless Chromium.
 */
export interface Stack {
  api: RunningApi;
  database: DatabaseConnection;
  config: Config;
  worker?: RunningDeliveryWorker;
  browser: Browser;
  page: Page;
  clientId: string;
  laboratoryId: string;
  /** A sandbox key with every scope. */
  key: string;
  newKey(options?: { scopes?: Scope[]; expiresAt?: Date; environment?: 'sandbox' | 'production' }): Promise<{ key: string; key_id: string }>;
  /** A partner REST call with `key` (default: the stack's key). */
  rest(method: string, path: string, options?: { key?: string; json?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

export async function startStack(
  name: string,
  options: { worker?: boolean; viewport?: { width: number; height: number }; env?: Record<string, string> } = {},
): Promise<Stack> {
  const { dir } = await ensureConsoleBuilt();
  // A file with a delivery worker gets a database of its own: workers share pg-boss's queue within a
  // database and would take each other's jobs, with another retry policy and another encryption key.
  const own: TestDatabase | undefined = options.worker ? await createTestDatabase(inject('databaseUrl'), `console_${name}`) : undefined;
  const databaseUrl = own?.url ?? inject('databaseUrl');
  const database = connectDatabase(databaseUrl, { max: 2, applicationName: `console-e2e-${name}` });
  const demo = await seedDemo(database.db);
  const client = await createClient(database.db, demo.laboratory_id, `Console e2e ${name}`);
  await grantPrograms(database.db, { clientId: client.client_id, environment: 'sandbox', all: true });
  await grantPrograms(database.db, { clientId: client.client_id, environment: 'production', all: true });
  const newKey = async (o: { scopes?: Scope[]; expiresAt?: Date; environment?: 'sandbox' | 'production' } = {}) =>
    createKey(database.db, { clientId: client.client_id, environment: o.environment ?? 'sandbox', scopes: o.scopes ?? [...SCOPES], expiresAt: o.expiresAt });
  const { key } = await newKey();
  // The API's own origin is configured before it starts, as `npm start` does, so the OpenAPI
  // document (and /docs's samples) name it: the document never takes it from a request.
  const port = await freePort();
  const config = loadConfig({
    PORT: String(port),
    HOST: '127.0.0.1',
    PARTNER_SANDBOX_BASE_URL: `http://127.0.0.1:${port}${PARTNER_BASE_PATH}`,
    // CONSOLE_E2E_LOG_LEVEL=error shows the API's and worker's own logs when a browser test sees a 5xx.
    LOG_LEVEL: process.env.CONSOLE_E2E_LOG_LEVEL ?? 'silent',
    PARTNER_DB_POOL_SIZE: '4',
    PARTNER_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
    PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1,1,1',
    PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS: '0.5',
    ...options.env,
  });
  const logger = createLogger(config, `console-e2e-${name}`);
  const api = await startPartnerApi({ config, databaseUrl, logger, consoleDir: dir });
  const worker = options.worker ? await startDeliveryWorker(databaseUrl, { config, logger }) : undefined;
  const browser = await openBrowser(options.viewport);
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: api.url });

  const rest: Stack['rest'] = async (method, path, o = {}) => {
    const response = await fetch(`${api.url}${PARTNER_BASE_PATH}${path}`, {
      method,
      headers: { authorization: `Bearer ${o.key ?? key}`, ...(o.json === undefined ? {} : { 'content-type': 'application/json' }), ...o.headers },
      body: o.json === undefined ? undefined : JSON.stringify(o.json),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null, headers: response.headers };
  };

  return {
    api,
    database,
    config,
    worker,
    browser,
    page: browser.page,
    clientId: client.client_id,
    laboratoryId: demo.laboratory_id,
    key,
    newKey,
    rest,
    close: async () => {
      await browser.close();
      await api.close();
      await worker?.close();
      await database.close();
      await own?.drop();
    },
  };
}

/** Opens the console and enters `key`, as a reader would: the key field has focus, Enter submits. */
export async function openConsole(stack: Stack, key = stack.key): Promise<void> {
  const { page } = stack;
  await page.goto(`${stack.api.url}/console/`);
  await page.getByLabel('Sandbox API key').fill(key);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}

export const nav = (page: Page) => page.getByRole('navigation', { name: 'Console' });

/**
 * Times one interaction as a reader feels it (from the action to the moment its outcome is on
 * screen) and appends it to test-artifacts/console/timings.jsonl for the report.
 */
export async function timed<T>(label: string, action: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const value = await action();
  const ms = Math.round(performance.now() - started);
  mkdirSync(ARTIFACTS, { recursive: true });
  appendFileSync(join(ARTIFACTS, 'timings.jsonl'), `${JSON.stringify({ label, ms, at: new Date().toISOString() })}\n`);
  return value;
}

/** The browser's clipboard text (the test context is granted clipboard access). */
export const clipboardText = (page: Page) => page.evaluate(() => navigator.clipboard.readText());
