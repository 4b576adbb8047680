import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orders } from '@lop/db';
import { eq } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { screenshot } from './browser';
import { nav, openConsole, startStack, timed, type Stack } from './harness';

/**
 * Issue 24, items 1 and 2: one order's page state never shows on another's, and the partner
 * actions that had no page (cancel, requirements, serviceability, catalog, locations, subjects)
 * can be tried in the console, each through the inspector.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack('partner_actions');
  await openConsole(stack);
});
afterAll(() => stack?.close());

async function restOrder(externalOrderId: string): Promise<string> {
  const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
  const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: externalOrderId };
  const created = await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } });
  expect(created.status).toBe(201);
  return created.body.data.order_id as string;
}

const goToOrder = (page: Page, id: string) => page.evaluate((orderId) => (window.location.hash = `/orders/${orderId}`), id);
const noWiderThanScreen = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

describe('moving from one order to another', () => {
  it('shows nothing of the previous order: no banner, no create request, no scenario choice or outcome', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Fixtures' }).click();
    const card = page.locator('article', { has: page.getByRole('heading', { name: 'minimal', exact: true }) });
    await card.getByRole('button', { name: 'Create order' }).click();
    await page.getByText(/^Order console-minimal-.* created from the minimal fixture/).waitFor();
    const x = page.url().split('/orders/')[1];
    await page.getByRole('region', { name: 'The request that created this order' }).waitFor();

    // Pick a scenario other than the preselected one and run a step: its outcome banner shows.
    const select = page.getByLabel('Scenario', { exact: true });
    await select.waitFor();
    const options = await select.locator('option').evaluateAll((o) => o.map((e) => (e as HTMLOptionElement).value));
    const preselected = await select.inputValue();
    const other = options.find((v) => v !== preselected)!;
    await select.selectOption(other);
    await page.getByRole('button', { name: 'Run first step' }).click();
    await page.getByRole('status').filter({ hasText: /^Applied 1 step/ }).waitFor();

    const y = await restOrder(`switch-${Date.now()}`);
    await timed('order X → order Y by hash (no reload)', async () => {
      await goToOrder(page, y);
      await page.getByRole('heading', { level: 1, name: /^switch-/ }).waitFor();
      await page.getByLabel('Scenario', { exact: true }).waitFor();
    });
    expect(page.url()).toContain(y);
    expect(x).not.toBe(y);
    await expect.poll(() => page.getByText(/created from the .* fixture/).count()).toBe(0);
    expect(await page.getByRole('region', { name: 'The request that created this order' }).count()).toBe(0);
    expect(await page.getByRole('status').filter({ hasText: /^Applied/ }).count()).toBe(0);
    // The fresh order preselects its own first scenario, and nothing says "cannot continue".
    expect(await page.getByLabel('Scenario', { exact: true }).inputValue()).toBe(preselected);
    expect(await page.getByText('(cannot continue)').count()).toBe(0);
    expect(await page.getByText('0 of').first().textContent()).toMatch(/^0 of \d+ steps done/);

    // And back to X: X's own progress, not Y's.
    await goToOrder(page, x);
    await page.getByRole('heading', { level: 1, name: /^console-minimal-/ }).waitFor();
    expect(await page.getByText(/created from the .* fixture/).count()).toBe(0);
  });
});

describe('cancelling an order from its page', () => {
  for (const viewport of [
    { width: 1366, height: 768 },
    { width: 390, height: 844 },
  ]) {
    it(`cancels (200, order.cancelled) and a second try shows the API's 409 — at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      const id = await restOrder(`cancel-${viewport.width}-${Date.now()}`);
      await goToOrder(page, id);
      const card = page.getByRole('article', { name: 'Cancel the order' });
      await card.getByRole('button', { name: 'Cancel order…' }).click();
      await timed(`order: cancel → 200 shown (${viewport.width} px)`, async () => {
        await card.getByRole('button', { name: 'Yes, cancel this order' }).click();
        await card.getByRole('status').filter({ hasText: 'Cancelled' }).waitFor();
      });
      expect(await card.getByRole('status').textContent()).toContain('cancelled');
      const [row] = await stack.database.db.select().from(orders).where(eq(orders.id, id));
      expect(row.lifecycleDetail).toMatch(/cancel/);
      const inspector = card.getByRole('region', { name: 'Cancel request' });
      await inspector.getByText('200 OK').waitFor();
      await inspector.getByRole('button', { name: /partner request/ }).click();
      expect(await inspector.getByLabel('Request', { exact: true }).textContent()).toContain(`POST ${stack.api.url}/api/public/partner/v1/orders/${id}/cancel`);
      // The header shows the new state once the order is read again.
      await page.locator('.order-summary').getByText(/cancel/i).first().waitFor();
      expect(await noWiderThanScreen(page)).toBeLessThanOrEqual(0);

      await card.getByRole('button', { name: 'Cancel order…' }).click();
      await card.getByRole('button', { name: 'Yes, cancel this order' }).click();
      await card.getByRole('alert').getByText('order_not_cancellable').waitFor();
      await inspector.getByText('409 Conflict').first().waitFor();
      await screenshot(page, `cancel-409-${viewport.width}`);
    });
  }
});

describe('before ordering: requirements, serviceability, catalog, locations, subjects on the fixtures page', () => {
  for (const viewport of [
    { width: 1366, height: 768 },
    { width: 390, height: 844 },
  ]) {
    it(`answers "is billing_mode required, with which values?" in place and runs each read through the inspector — at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      // A fresh fixtures page (its inspectors closed), as a reader arriving from elsewhere sees it.
      await nav(page).getByRole('link', { name: 'Overview' }).click();
      await nav(page).getByRole('link', { name: 'Fixtures' }).click();
      const requirements = page.getByRole('article', { name: 'Requirements profile' });
      await requirements.getByText('Billing mode').waitFor();
      // The demo laboratory requires billing_mode in New York only.
      await timed(`fixtures: requirements for region US-NY → shown (${viewport.width} px)`, async () => {
        await page.getByLabel('Region (optional)').fill('US-NY');
        await requirements.getByRole('region', { name: 'Requirements request' }).locator('.status-chip', { hasText: '200 OK' }).waitFor();
        await expect.poll(() => requirements.locator('dt:has-text("Billing mode") + dd').textContent()).toMatch(/^required/);
      });
      const billing = await requirements.locator('dt:has-text("Billing mode") + dd').textContent();
      expect(billing).toContain('client_bill');
      expect(billing).toContain('insurance');
      const reqInspector = requirements.getByRole('region', { name: 'Requirements request' });
      await reqInspector.getByRole('button', { name: /partner request/ }).click();
      expect(await reqInspector.getByLabel('Request', { exact: true }).textContent()).toMatch(/^GET .*\/v1\/programs\/[0-9a-f-]{36}\/requirements\?region=US-NY/);

      const serviceability = page.getByRole('article', { name: 'Serviceability' });
      await timed(`fixtures: check serviceability → answer shown (${viewport.width} px)`, async () => {
        await serviceability.getByRole('button', { name: 'Check serviceability' }).click();
        await serviceability.getByRole('status').waitFor();
      });
      expect(await serviceability.getByRole('status').textContent()).toMatch(/Serviceable\.|Not serviceable/);
      await page.getByLabel('Region (optional)').fill('ZZ-ZZ');
      await serviceability.getByRole('button', { name: 'Check serviceability' }).click();
      await serviceability.getByRole('status').getByText('region_not_served').waitFor();
      const svcInspector = serviceability.getByRole('region', { name: 'Serviceability request' });
      await svcInspector.getByRole('button', { name: /partner request/ }).click();
      const svcRequest = await svcInspector.getByLabel('Request', { exact: true }).textContent();
      expect(svcRequest).toContain(`POST ${stack.api.url}/api/public/partner/v1/serviceability`);
      expect(svcRequest).toContain('"region": "ZZ-ZZ"');

      const catalog = page.getByRole('article', { name: 'Catalog' });
      expect(await catalog.locator('tbody tr').count()).toBeGreaterThan(0);
      await catalog.getByRole('region', { name: 'Catalog request' }).locator('.status-chip', { hasText: '200 OK' }).waitFor();

      const locations = page.getByRole('article', { name: 'Collection locations' });
      await locations.getByRole('region', { name: 'Locations request' }).locator('.status-chip', { hasText: '200 OK' }).waitFor();
      expect(await locations.locator('li').count()).toBeGreaterThan(0);

      const subject = page.getByRole('article', { name: 'Register a subject' });
      const reference = `subj-${viewport.width}-${Date.now()}`;
      await subject.getByLabel('external_subject_id').fill(reference);
      await subject.getByRole('button', { name: 'Register subject' }).click();
      await subject.getByRole('status').getByText(reference).waitFor();
      const subjectInspector = subject.getByRole('region', { name: 'Register subject request' });
      await subjectInspector.getByRole('button', { name: /partner request/ }).click();
      expect(await subjectInspector.getByLabel('Request', { exact: true }).textContent()).toContain(`PUT ${stack.api.url}/api/public/partner/v1/subjects/${reference}`);
      expect(await noWiderThanScreen(page)).toBeLessThanOrEqual(0);
      await screenshot(page, `before-ordering-${viewport.width}`);
    });
  }

  it('logged no browser error besides the 409s asked for', () => {
    expect(stack.browser.problems.filter((p) => !/409|orders\.cancel/.test(p))).toEqual([]);
  });
});
