import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { GUIDES } from '@lop/partner-api';
import { seriousAxeViolations, pageOverflow } from './axe';
import { ARTIFACTS } from './browser';
import { nav, openConsole, startStack, type Stack } from './harness';

/**
 * Every console view, every partner guide and the API reference at /docs, at 1366×768 and 390×844:
 * axe finds no serious or critical violation and nothing is wider than the screen (issue 35).
 * The main console views are also photographed, as the README shows them: to test-artifacts/console/screens,
 * or to CONSOLE_SCREENSHOTS_DIR (`npm run console:screenshots` refreshes docs/console).
 */
const OUT = process.env.CONSOLE_SCREENSHOTS_DIR ?? join(ARTIFACTS, 'screens');
const WIDTHS = [
  ['desktop', { width: 1366, height: 768 }],
  ['narrow', { width: 390, height: 844 }],
] as const;
type Width = (typeof WIDTHS)[number][0];

let stack: Stack;
let receiver: Server;
let orderId: string;
let subscriptionId: string;

/** A console procedure called from the page with the stack's key, as the console itself calls it. */
function consoleCall<T>(page: Page, procedure: string, input: unknown): Promise<T> {
  return page.evaluate(
    async ({ procedure, input, key }) => {
      const response = await fetch(`/api/trpc/${procedure}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(input) });
      return ((await response.json()) as { result: { data: T } }).result.data;
    },
    { procedure, input, key: stack.key },
  );
}

beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  stack = await startStack('screens', { worker: true });
  // An endpoint that refuses (410: a dead letter at once) the first delivery of each specimen.updated
  // event and takes everything else, so the views show a dead letter and, after a recovery, its replay.
  const seen = new Set<string>();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const eventId = String(req.headers['x-partner-event-id']);
      const type = (JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { type?: string }).type;
      const refuse = type === 'specimen.updated' && !seen.has(eventId);
      seen.add(eventId);
      res.writeHead(refuse ? 410 : 200, { 'content-type': 'application/json' }).end(refuse ? '{"error":"gone"}' : '{"received":true}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
  const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: 'clinic-2024-000184' };
  orderId = (await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } })).body.data.order_id;
  await openConsole(stack);
  // Register the endpoint through the console's own procedure, as a reader would from the Webhooks page.
  const started = new Date(Date.now() - 60_000).toISOString();
  subscriptionId = (
    await consoleCall<{ data: { subscription_id: string } }>(stack.page, 'console.webhooks.create', {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      event_types: ['order.updated', 'specimen.updated', 'result.final', 'result.corrected'],
    })
  ).data.subscription_id;
  expect((await stack.rest('POST', `/v1/sandbox/orders/${orderId}/simulate`, { json: { scenario: 'corrected_result' } })).status).toBe(200);
  // Recover the dead letter as the endpoint page's Recover does, once the worker has dead-lettered it.
  for (let tries = 0; ; tries++) {
    const { replayed } = (await consoleCall<{ data: { replayed: number } }>(stack.page, 'console.webhooks.recover', { subscription_id: subscriptionId, since: started })).data;
    if (replayed > 0) break;
    if (tries > 60) throw new Error('no dead letter to recover after 30 s');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
});
afterAll(async () => {
  await stack?.close();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

/** The checks every view passes: nothing wider than the screen, no serious or critical axe violation. */
async function check(page: Page, name: string, width: Width) {
  const { overflow, culprits } = await pageOverflow(page);
  expect.soft(overflow, `${name} (${width}) is wider than the screen: ${culprits.join(', ')}`).toBeLessThanOrEqual(0);
  expect.soft(await seriousAxeViolations(page), `${name} (${width}): axe`).toEqual([]);
}

async function shoot(page: Page, name: string, width: Width) {
  await page.screenshot({ path: join(OUT, `${name}-${width}.png`) });
}

async function scrollTo(page: Page, heading: string) {
  await page.getByRole('heading', { name: heading, exact: true }).first().evaluate((h) => window.scrollTo(0, h.getBoundingClientRect().top + window.scrollY - 12));
}

describe('every view at 1366 and 390 px: no serious or critical axe violation, nothing wider than the screen', () => {
  for (const [width, viewport] of WIDTHS) {
    it(`the console's views at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      await page.goto(`${stack.api.url}/console/#/`);
      await page.getByRole('article', { name: 'API key' }).getByText('catalog:read').waitFor();
      await check(page, 'overview', width);
      await shoot(page, 'overview', width);

      await nav(page).getByRole('link', { name: 'Fixtures' }).click();
      const minimal = page.locator('article', { has: page.getByRole('heading', { name: 'minimal' }) });
      await minimal.getByRole('button', { name: /partner request/ }).click();
      await check(page, 'fixtures', width);
      await minimal.getByRole('button', { name: /partner request/ }).scrollIntoViewIfNeeded();
      await shoot(page, 'fixtures-request', width);

      await nav(page).getByRole('link', { name: 'Orders' }).click();
      await page.getByRole('link', { name: 'clinic-2024-000184' }).first().waitFor();
      await check(page, 'orders', width);
      await shoot(page, 'orders', width);

      await page.evaluate((id) => (window.location.hash = `/orders/${id}`), orderId);
      await page.getByRole('heading', { level: 1, name: 'clinic-2024-000184' }).waitFor();
      await page.getByText('9 of 9 steps done').or(page.getByText('11 of 11 steps done')).first().waitFor();
      // Every event of the order read (the stream polls every 1.5 s), as the README's picture shows it.
      await page.locator('aside.order-events').getByText('· 10 events').waitFor();
      await page.getByRole('region', { name: 'What changed from v1 to v2' }).waitFor();
      await page.getByRole('article', { name: 'Result version 1' }).waitFor();
      await check(page, 'order (with its results and specimens)', width);
      await page.evaluate(() => window.scrollTo(0, 0));
      await shoot(page, 'order', width);
      await scrollTo(page, 'Results');
      await shoot(page, 'results', width);

      await nav(page).getByRole('link', { name: 'Events' }).click();
      await page.locator('.timeline-item .badge', { hasText: 'webhook delivered' }).first().waitFor({ timeout: 20_000 });
      // The specimen event with its dead letter and the replay that delivered it, opened.
      const specimen = page.locator('.timeline-item[data-type="specimen.updated"]', { has: page.locator('.badge', { hasText: 'webhook dead lettered' }) }).first();
      await specimen.locator('.badge', { hasText: 'webhook delivered' }).waitFor({ timeout: 20_000 });
      await specimen.locator('.event-toggle').first().click();
      await specimen.getByText('(replay)').waitFor();
      // Recovered by the replay: shown as a dead letter that was recovered, with its replay.
      await specimen.getByText(/Dead letter \(.*\), recovered/).waitFor();
      await check(page, 'events (a dead letter and its replay opened)', width);
      await specimen.locator('.event-toggle').first().click();
      await page.locator('.timeline-item[data-type="result.final"] .event-toggle').first().click();
      await check(page, 'events', width);
      await shoot(page, 'events', width);

      await nav(page).getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('link', { name: /127\.0\.0\.1/ }).first().waitFor();
      await check(page, 'webhooks', width);
      await shoot(page, 'webhooks', width);

      await page.evaluate((id) => (window.location.hash = `/webhooks/${id}`), subscriptionId);
      const log = page.getByRole('list', { name: 'Deliveries, newest first' });
      await log.waitFor();
      // A delivery and its first attempt opened: the request as sent and the answer.
      const first = log.locator('li.delivery-entry').first();
      await first.locator('.event-toggle').first().click();
      await first.getByRole('button', { name: /Attempt 1/ }).click();
      await first.getByLabel('Request of attempt 1').waitFor();
      await check(page, 'webhook endpoint', width);
      await first.locator('.event-toggle').first().click();
      await scrollTo(page, 'Deliveries');
      await shoot(page, 'webhook-log', width);

      await nav(page).getByRole('link', { name: 'Logs' }).click();
      const simulate = page.getByRole('row').filter({ hasText: 'POST /v1/sandbox/orders/{orderId}/simulate' });
      await simulate.getByRole('link').first().waitFor({ timeout: 15_000 });
      await check(page, 'logs', width);
      await shoot(page, 'request-log', width);
      await simulate.getByRole('link').first().click();
      await page.getByLabel('Response body').waitFor();
      await check(page, 'log entry', width);
      await page.evaluate(() => window.scrollTo(0, 0));
      await shoot(page, 'request-log-entry', width);
    });

    it(`the guides and the API reference at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      await page.goto(`${stack.api.url}/docs/guides`);
      await page.getByRole('heading', { level: 1, name: 'Guides' }).waitFor();
      await check(page, 'guides', width);
      for (const { slug } of GUIDES) {
        await page.goto(`${stack.api.url}/docs/guides/${slug}`);
        await page.getByRole('heading', { level: 1 }).first().waitFor();
        await check(page, `guide ${slug}`, width);
      }
      // The reference as the console leaves it in this tab (its key and fixtures), and the create-order operation opened.
      await page.goto(`${stack.api.url}/docs`);
      await page.getByRole('heading', { name: 'Laboratory Ordering Partner API' }).first().waitFor();
      await page.locator('pre', { hasText: /curl / }).first().waitFor();
      await check(page, '/docs', width);
      if (width === 'desktop') {
        // An operation opened from the sidebar (at 390 px the sidebar is behind a menu): its tag's endpoint list and the operation.
        await page.getByRole('button', { name: 'Open Group - Orders' }).click();
        await page.getByText('Create an order', { exact: true }).first().click();
        await page.locator('section', { has: page.getByRole('heading', { name: 'Create an order' }) }).last().getByText(/Test Request here/).waitFor();
        await check(page, '/docs, Create an order opened', width);
      }
    });
  }

  it('logged no browser error', () => {
    expect(stack.browser.problems).toEqual([]);
  });
});
