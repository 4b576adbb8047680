import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolationsIn, pageOverflow } from './axe';
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
      expect((await pageOverflow(page)).overflow).toBeLessThanOrEqual(0);
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

/** A datetime-local value, as the reader types it (the browser's clock is UTC here). */
const localInput = (ms: number) => new Date(ms).toISOString().slice(0, 16);

/**
 * Issue 35, items 6 and 10: the Logs page filters by source (lop's own requests can be hidden), method,
 * time range, key prefix and text in the stored bodies, with labelled controls a keyboard works,
 * at a desktop's width and a phone's.
 */
describe('the Logs page filters', () => {
  for (const viewport of [
    { width: 1366, height: 768 },
    { width: 390, height: 844 },
  ]) {
    it(`by source, method, text in bodies, key prefix and time — labelled, keyboard-operable, no axe violation — at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      const other = await stack.newKey({ scopes: ['orders:read', 'events:read'] });
      // lop's own request (its User-Agent), a REST create, and a read of the order with another key.
      const polled = await stack.rest('GET', '/v1/sandbox/scenarios', { headers: { 'user-agent': 'lop/0.1.0' } });
      expect(polled.status).toBe(200);
      const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
      const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: `filters-${randomUUID()}` };
      const created = await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } });
      expect(created.status).toBe(201);
      const orderId = created.body.data.order_id as string;
      const read = await stack.rest('GET', `/v1/orders/${orderId}`, { key: other.key });
      expect(read.status).toBe(200);
      const [lopId, createdId, readId] = [polled, created, read].map((r) => r.body.request_id as string);
      const link = (id: string) => page.getByRole('link', { name: id });
      const shown = (id: string) => link(id).waitFor({ timeout: 15_000 });
      const gone = (id: string) => expect.poll(() => link(id).count(), { timeout: 15_000 }).toBe(0);

      await page.evaluate(() => (window.location.hash = '/'));
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      await nav(page).getByRole('link', { name: 'Logs' }).click();
      await page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor();
      await shown(readId);
      await shown(lopId);
      const lopRow = page.getByRole('row').filter({ has: link(lopId) });
      expect(await lopRow.textContent()).toContain('from lop');

      const filters = page.getByRole('search', { name: 'Filter requests' });
      // Every control is named by its label.
      for (const name of ['Status', 'Method', 'Route', 'From', 'To', 'Key prefix', 'Text in bodies', 'request_id']) expect(await filters.getByLabel(name, { exact: true }).count(), name).toBe(1);
      const sources = filters.getByRole('group', { name: 'Source' });
      for (const name of ['REST', 'lop', 'This console']) expect(await sources.getByRole('checkbox', { name }).isChecked(), name).toBe(true);

      await timed(`request log: hide lop by keyboard (${viewport.width} px)`, async () => {
        await sources.getByRole('checkbox', { name: 'lop' }).focus();
        await page.keyboard.press('Space');
        await gone(lopId);
        await shown(createdId);
      });
      expect(await sources.getByRole('checkbox', { name: 'lop' }).isChecked()).toBe(false);

      // Method, chosen from the keyboard.
      await filters.getByLabel('Method', { exact: true }).focus();
      await filters.getByLabel('Method', { exact: true }).selectOption('POST');
      await gone(readId);
      await shown(createdId);
      await filters.getByLabel('Method', { exact: true }).selectOption('');

      // Text in the stored bodies: the order_id (a service id, kept) finds both the create and the read; the partner's external id (redacted) finds nothing.
      const text = filters.getByLabel('Text in bodies', { exact: true });
      await text.fill(orderId.toUpperCase());
      await shown(readId);
      await shown(createdId);
      await gone(lopId);
      await text.fill(body.external_order_id);
      await page.getByText('No logged request matches these filters.').waitFor({ timeout: 15_000 });
      await text.fill('');

      // Key prefix: applied once whole; until then the hint says why.
      const key = filters.getByLabel('Key prefix', { exact: true });
      await key.fill(other.key.slice(0, 11));
      expect(await key.getAttribute('aria-invalid')).toBe('true');
      await page.getByText(/the filter applies once it is whole/).waitFor();
      await key.fill(other.key.slice(0, 13));
      await gone(createdId);
      await shown(readId);
      expect(await key.getAttribute('aria-invalid')).toBeNull();
      await key.fill('');

      // Time: from an hour ahead nothing is logged yet; a "to" before the "from" is said, not sent.
      await filters.getByLabel('From', { exact: true }).fill(localInput(Date.now() + 3_600_000));
      await page.getByText('No logged request matches these filters.').waitFor({ timeout: 15_000 });
      await filters.getByLabel('To', { exact: true }).fill(localInput(Date.now() - 3_600_000));
      await page.getByRole('alert').filter({ hasText: '“To” must be later than “From”.' }).waitFor();
      expect(await filters.getByLabel('To', { exact: true }).getAttribute('aria-invalid')).toBe('true');
      // A range around now holds the requests just made.
      await filters.getByLabel('From', { exact: true }).fill(localInput(Date.now() - 3_600_000 * 2));
      await filters.getByLabel('To', { exact: true }).fill(localInput(Date.now() + 3_600_000));
      await shown(createdId);

      // The page fits a phone; the filters wrap, nothing scrolls sideways.
      expect((await pageOverflow(page)).overflow).toBeLessThanOrEqual(0);
      expect(await axeViolationsIn(page, ['main'])).toEqual([]);
      await screenshot(page, viewport.width > 1000 ? 'request-log-filters' : 'request-log-filters-narrow');

      await filters.getByRole('button', { name: 'Clear filters' }).click();
      await shown(lopId);
      expect(await sources.getByRole('checkbox', { name: 'lop' }).isChecked()).toBe(true);
    });
  }
});
