import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { ARTIFACTS } from './browser';
import { nav, openConsole, startStack, type Stack } from './harness';

/**
 * The main views at 1366×768 and 390×844, as the README shows them: each must render with
 * nothing wider than the screen. The pictures go to test-artifacts/console/screens, or to
 * CONSOLE_SCREENSHOTS_DIR (docs/console when refreshing the README's pictures).
 */
const OUT = process.env.CONSOLE_SCREENSHOTS_DIR ?? join(ARTIFACTS, 'screens');
const DESKTOP = { width: 1366, height: 768 };
const NARROW = { width: 390, height: 844 };

let stack: Stack;
let receiver: Server;
let orderId: string;
let subscriptionId: string;

beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  stack = await startStack('screens', { worker: true });
  let count = 0;
  // An endpoint that refuses now and then (410: a dead letter at once), so the log shows what failures look like.
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(++count % 4 === 0 ? 410 : 200, { 'content-type': 'application/json' }).end('{"received":true}'));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
  const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: 'clinic-2024-000184' };
  orderId = (await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } })).body.data.order_id;
  await openConsole(stack);
  // Register the endpoint through the console's own procedure, as a reader would from the Webhooks page.
  subscriptionId = await stack.page.evaluate(
    async ({ url, key }) => {
      const response = await fetch('/api/trpc/console.webhooks.create', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ url, event_types: ['order.updated', 'specimen.updated', 'result.final', 'result.corrected'] }),
      });
      return ((await response.json()) as { result: { data: { data: { subscription_id: string } } } }).result.data.data.subscription_id;
    },
    { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, key: stack.key },
  );
  expect((await stack.rest('POST', `/v1/sandbox/orders/${orderId}/simulate`, { json: { scenario: 'corrected_result' } })).status).toBe(200);
});
afterAll(async () => {
  await stack?.close();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

async function shoot(page: Page, name: string, width: 'desktop' | 'narrow') {
  expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), `${name} (${width}) is wider than the screen`).toBeLessThanOrEqual(0);
  await page.screenshot({ path: join(OUT, `${name}-${width}.png`) });
}

async function scrollTo(page: Page, heading: string) {
  await page.getByRole('heading', { name: heading, exact: true }).first().evaluate((h) => window.scrollTo(0, h.getBoundingClientRect().top + window.scrollY - 12));
}

describe('the console’s main views, desktop and narrow', () => {
  for (const [width, viewport] of [
    ['desktop', DESKTOP],
    ['narrow', NARROW],
  ] as const) {
    it(`renders them at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      await nav(page).getByRole('link', { name: 'Overview' }).click();
      await page.getByRole('article', { name: 'API key' }).getByText('catalog:read').waitFor();
      await shoot(page, 'overview', width);

      await nav(page).getByRole('link', { name: 'Fixtures' }).click();
      const minimal = page.locator('article', { has: page.getByRole('heading', { name: 'minimal' }) });
      await minimal.getByRole('button', { name: /partner request/ }).click();
      await minimal.getByRole('button', { name: /partner request/ }).scrollIntoViewIfNeeded();
      await shoot(page, 'fixtures-request', width);

      await page.evaluate((id) => (window.location.hash = `/orders/${id}`), orderId);
      await page.getByRole('heading', { level: 1, name: 'clinic-2024-000184' }).waitFor();
      await page.getByText('9 of 9 steps done').or(page.getByText('11 of 11 steps done')).first().waitFor();
      // Every event of the order read (the stream polls every 1.5 s), as the README's picture shows it.
      await page.locator('aside.order-events').getByText('· 10 events').waitFor();
      await page.evaluate(() => window.scrollTo(0, 0));
      await shoot(page, 'order', width);
      await page.getByRole('region', { name: 'What changed from v1 to v2' }).waitFor();
      await scrollTo(page, 'Results');
      await shoot(page, 'results', width);

      await nav(page).getByRole('link', { name: 'Events' }).click();
      await page.locator('.timeline-item .badge', { hasText: 'webhook delivered' }).first().waitFor({ timeout: 20_000 });
      await page.locator('.timeline-item[data-type="result.final"] .event-toggle').first().click();
      await shoot(page, 'events', width);

      await page.evaluate((id) => (window.location.hash = `/webhooks/${id}`), subscriptionId);
      await page.getByRole('list', { name: 'Deliveries, newest first' }).waitFor();
      await scrollTo(page, 'Deliveries');
      await shoot(page, 'webhook-log', width);

      await nav(page).getByRole('link', { name: 'Logs' }).click();
      const simulate = page.getByRole('row').filter({ hasText: 'POST /v1/sandbox/orders/{orderId}/simulate' });
      await simulate.getByRole('link').first().waitFor({ timeout: 15_000 });
      await shoot(page, 'request-log', width);
      await simulate.getByRole('link').first().click();
      await page.getByLabel('Response body').waitFor();
      await page.evaluate(() => window.scrollTo(0, 0));
      await shoot(page, 'request-log-entry', width);
    });
  }

  it('logged no browser error', () => {
    expect(stack.browser.problems).toEqual([]);
  });
});
