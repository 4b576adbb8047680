import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenshot } from './browser';
import { nav, openConsole, startStack, timed, type Stack } from './harness';

/**
 * Issue 24, item 3: the request log in the console — every sandbox REST request of the client
 * (here: curl-like calls, and the console's own actions), filtered, and one opened with its
 * redacted bodies.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack('request_log');
  await openConsole(stack);
});
afterAll(() => stack?.close());

const PATIENT_NAME = 'Wilhelmina';

describe('the Logs page', () => {
  for (const viewport of [
    { width: 1366, height: 768 },
    { width: 390, height: 844 },
  ]) {
    it(`lists REST and console requests, filters them, and opens one with its redacted bodies — at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
      const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: `log-${randomUUID()}`, patient: { legal_first_name: PATIENT_NAME } };
      const created = await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } });
      expect(created.status).toBe(201);
      const missing = await stack.rest('GET', `/v1/orders/${randomUUID()}`);
      expect(missing.status).toBe(404);
      const createdId = created.body.request_id as string;
      const missingId = missing.body.request_id as string;

      await page.evaluate(() => (window.location.hash = '/'));
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      await nav(page).getByRole('link', { name: 'Logs' }).click();
      await page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor();
      await timed(`request log: a REST request listed (${viewport.width} px)`, () => page.getByRole('link', { name: createdId }).waitFor({ timeout: 15_000 }));
      const createdRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: createdId }) });
      expect(await createdRow.textContent()).toMatch(/POST \/v1\/orders.*201/);
      // The console's own calls of partner procedures (the lab heading, health) are logged as their REST routes.
      await page.getByText('from this console').first().waitFor({ timeout: 15_000 });
      // The page fits the screen; a wide table scrolls in its own box.
      expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      if (viewport.width > 1000) await screenshot(page, 'request-log');

      await timed(`request log: filter 4xx (${viewport.width} px)`, async () => {
        await page.getByLabel('Status').selectOption('4xx');
        await page.getByRole('link', { name: missingId }).waitFor();
        await expect.poll(() => page.getByRole('link', { name: createdId }).count()).toBe(0);
      });
      await page.getByLabel('Status').selectOption('');
      await page.getByLabel('request_id').fill(createdId);
      await expect.poll(() => page.getByRole('link', { name: missingId }).count()).toBe(0);
      await page.getByRole('link', { name: createdId }).waitFor();

      await timed(`request log: open one request (${viewport.width} px)`, async () => {
        await page.getByRole('link', { name: createdId }).click();
        await page.getByRole('heading', { level: 1, name: `Request ${createdId}` }).waitFor();
        await page.getByLabel('Request body').waitFor();
      });
      const requestBody = (await page.getByLabel('Request body').textContent()) ?? '';
      // The allow-list (docs/request-log.md): the service's ids kept, the partner's text as its type and size, on one line.
      expect(requestBody).toContain('"patient": {"$redacted": "object", "length": 1}');
      expect(requestBody).toContain(`"external_order_id": {"$redacted": "string", "length": ${body.external_order_id.length}}`);
      expect(requestBody).toContain(`"program_id": "${body.program_id}"`);
      expect(await page.content()).not.toContain(PATIENT_NAME);
      expect(await page.content()).not.toContain(body.external_order_id);
      expect(await page.getByLabel('Response body').textContent()).toContain(created.body.data.order_id);
      if (viewport.width > 1000) await screenshot(page, 'request-log-entry');
      await page.getByRole('link', { name: '← All requests' }).click();
      await page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor();
    });
  }
});
