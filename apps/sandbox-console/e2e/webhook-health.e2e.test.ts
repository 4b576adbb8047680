import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolationsIn, pageOverflow } from './axe';
import { screenshot } from './browser';
import { nav, openConsole, startStack, type Stack } from './harness';

/**
 * Issue 35 (items 10 and 11) in a real browser: an endpoint's last 24 hours and the attempts
 * behind each hour; an attempt's "next attempt" only while its delivery waits for it; a recovered
 * dead letter that says so and leads to its replay, and a count that says "1 dead letter".
 */

/** A partner endpoint answering every delivery with `status` (the test changes it as it goes). */
async function startEndpoint() {
  const state = { status: 503, received: 0 };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.received++;
      res.writeHead(state.status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/health-hooks`,
    state,
    close: () => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections())),
  };
}

let stack: Stack;
let endpoint: Awaited<ReturnType<typeof startEndpoint>>;
beforeAll(async () => {
  // Six attempts a second apart, then ten minutes before the seventh: "Retry now" makes it the last.
  stack = await startStack('webhook_health', { worker: true, env: { PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1,1,600' } });
  endpoint = await startEndpoint();
  stack.page.on('dialog', (dialog) => void dialog.accept());
  await openConsole(stack);
});
afterAll(async () => {
  await stack?.close();
  await endpoint?.close();
});

const log = () => stack.page.getByRole('list', { name: 'Deliveries, newest first' });
const totals = () => stack.page.locator('.delivery-totals');

describe('a webhook endpoint’s health and dead letters, in the sandbox console', () => {
  let deadId: string;
  let endpointPath: string;

  it('shows "next attempt" only on the attempt whose retry is really scheduled, and none once "Retry now" made the delivery a dead letter', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Endpoint URL').fill(endpoint.url);
    await page.getByLabel('all event types').uncheck();
    await page.getByLabel('order.cancelled', { exact: true }).check();
    await page.getByRole('button', { name: 'Register endpoint' }).click();
    await page.getByRole('button', { name: 'I have stored it' }).click();
    endpointPath = new URL(page.url()).hash;

    const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
    const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: `health-${Date.now().toString(36)}` };
    const orderId = (await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } })).body.data.order_id;
    expect((await stack.rest('POST', `/v1/orders/${orderId}/cancel`)).status).toBe(200);

    const entry = log().locator('li.delivery-entry').first();
    await entry.getByText('6 attempts').waitFor({ timeout: 30_000 });
    deadId = (await entry.getAttribute('data-delivery-id'))!;
    await entry.getByRole('button', { name: /order\.cancelled/ }).click();
    const attempts = entry.locator('li.attempt');
    await expect.poll(() => attempts.count()).toBe(6);
    // Only attempt 6 waits for its retry; the times attempts 1-5 planned are past and taken.
    expect(await entry.locator('li.attempt').getByText(/next attempt/).count()).toBe(1);
    await attempts.nth(5).getByText(/next attempt .*\(in (9|10) minutes\)/).waitFor();

    await entry.getByRole('button', { name: 'Retry now' }).click();
    await entry.locator('.badge', { hasText: 'dead letter' }).waitFor({ timeout: 20_000 });
    await expect.poll(() => attempts.count()).toBe(7);
    expect(await entry.locator('li.attempt').getByText(/next attempt/).count()).toBe(0);
    expect(await entry.getByText(/next attempt/).count()).toBe(0);
    await expect.poll(() => totals().textContent(), { timeout: 10_000 }).toMatch(/· 1 dead letter$/);
    await screenshot(page, 'webhook-health-01-dead-letter');
  });

  it('after Recover, the dead letter says it was recovered, links to its replay, and the count leaves it', async () => {
    const { page } = stack;
    endpoint.state.status = 200;
    await page.getByRole('button', { name: 'Recover', exact: true }).click();
    await page.getByText('Replaying 1 event as new deliveries.').waitFor();
    const dead = log().locator(`li.delivery-entry[data-delivery-id="${deadId}"]`);
    await dead.locator('.badge', { hasText: 'recovered' }).waitFor();
    expect(await dead.getAttribute('data-recovered')).toBe('true');
    await expect.poll(() => totals().textContent(), { timeout: 10_000 }).toMatch(/· 0 dead letters, 1 recovered$/);
    // A second click a moment later replays nothing: the replay is on its way or delivered.
    await page.getByRole('button', { name: 'Recover', exact: true }).click();
    await page.getByText(/^No dead letter to replay since then/).waitFor();

    const link = dead.getByRole('link', { name: /^delivery [0-9a-f]{8}$/ });
    await link.click();
    await page.waitForURL(/\/deliveries\/[0-9a-f-]{36}$/);
    const replayId = new URL(page.url()).hash.split('/').at(-1)!;
    const replay = log().locator(`li.delivery-entry[data-delivery-id="${replayId}"]`);
    await replay.locator('.badge', { hasText: 'delivered' }).waitFor({ timeout: 20_000 });
    // That delivery alone (the list re-renders as its data arrives: polled, not read once).
    await expect.poll(() => log().locator('li.delivery-entry').count(), { timeout: 10_000 }).toBe(1);
    // Opened, with the way back to the dead letter it replays.
    await replay.getByRole('link', { name: deadId }).click();
    await log().locator(`li.delivery-entry[data-delivery-id="${deadId}"]`).waitFor();
    await page.getByRole('link', { name: 'All deliveries' }).click();
    await page.waitForURL((url) => url.hash === endpointPath);
  });

  for (const viewport of [
    { width: 1366, height: 768 },
    { width: 390, height: 844 },
  ]) {
    it(`shows the last 24 hours (a chart with a text alternative, a table), and an hour's attempts by keyboard, each leading to its delivery — at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      await page.goto(`${stack.api.url}/console/${endpointPath}`);
      const health = page.getByRole('article', { name: 'Last 24 hours' });
      // 7 failed attempts of the dead letter, 1 delivered of its replay.
      const chart = health.getByRole('img');
      await expect.poll(() => chart.getAttribute('aria-label'), { timeout: 15_000 }).toMatch(/^8 attempts in the last 24 hours: 1 succeeded, 7 failed; success rate 13%/);
      const table = health.getByRole('table');
      const rows = table.locator('tbody tr');
      const perHour = await rows.evaluateAll((trs) => trs.map((tr) => Number(tr.querySelectorAll('td')[0].textContent)));
      expect(perHour.reduce((a, b) => a + b, 0)).toBe(8);

      // The keyboard reaches an hour's button; Enter lists that hour's attempts and moves there.
      const last = rows.last().getByRole('button');
      await last.focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => last.getAttribute('aria-pressed')).toBe('true');
      const listed = health.getByRole('list', { name: /^Attempts .*, newest first$/ });
      await expect.poll(() => listed.getByRole('listitem').count()).toBe(perHour.at(-1));
      expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('H3');
      expect((await pageOverflow(page)).overflow).toBeLessThanOrEqual(0);
      expect(await axeViolationsIn(page, ['article[aria-labelledby="health-title"]', 'article[aria-labelledby="deliveries-title"]'])).toEqual([]);
      await screenshot(page, `webhook-health-02-hours-${viewport.width}`);

      await page.keyboard.press('Tab');
      const first = listed.getByRole('link').first();
      expect(await first.evaluate((a) => a === document.activeElement)).toBe(true);
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/deliveries\/[0-9a-f-]{36}$/);
      const deliveryId = new URL(page.url()).hash.split('/').at(-1)!;
      await log().locator(`li.delivery-entry[data-delivery-id="${deliveryId}"]`).waitFor();
      expect((await pageOverflow(page)).overflow).toBeLessThanOrEqual(0);
      expect(await axeViolationsIn(page, ['article[aria-labelledby="health-title"]', 'article[aria-labelledby="deliveries-title"]'])).toEqual([]);
    });
  }

  it('logged no browser error', () => {
    expect(stack.browser.problems).toEqual([]);
  });
});
