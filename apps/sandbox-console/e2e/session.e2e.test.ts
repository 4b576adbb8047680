import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeKey } from '@lop/domain';
import { screenshot } from './browser';
import { clipboardText, nav, openConsole, startStack, timed, type Stack } from './harness';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack('session');
});
afterAll(() => stack?.close());

/** Every tRPC call the page sends from now on, by procedure. */
function recordCalls(): { calls: string[]; stop(): void } {
  const calls: string[] = [];
  const listener = (request: { url(): string }) => {
    const match = /\/api\/trpc\/([\w.]+)/.exec(request.url());
    if (match) calls.push(match[1]);
  };
  stack.page.on('request', listener);
  return { calls, stop: () => stack.page.off('request', listener) };
}

const forgetKey = () => stack.page.getByRole('button', { name: 'Forget key' }).click();

/** An order created over REST the way a partner does it, from the minimal fixture. */
async function restOrder(externalOrderId: string): Promise<string> {
  const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
  const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: externalOrderId };
  const created = await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } });
  expect(created.status).toBe(201);
  return created.body.data.order_id;
}

describe('a console aware of its key and session', () => {
  it('shows the key’s prefix, environment, scopes and expiry, and disables what a missing scope forbids, with the reason', async () => {
    const limited = await stack.newKey({ scopes: ['orders:read', 'results:read', 'programs:read', 'catalog:read'], expiresAt: new Date(Date.now() + 3 * 86_400_000) });
    const recorder = recordCalls();
    await openConsole(stack, limited.key);
    const keyCard = stack.page.getByRole('article', { name: 'API key' });
    await keyCard.getByText(/expires|in 3 days|in 2 days/).first().waitFor();
    const text = await keyCard.textContent();
    expect(text).toContain(limited.key.slice(0, 12));
    expect(text).not.toContain(limited.key);
    expect(text).toMatch(/in (3|2) days/);
    const missing = await keyCard.locator('.scope-missing code').allTextContents();
    expect(missing).toEqual(['serviceability:read', 'subjects:write', 'orders:write', 'orders:cancel', 'events:read']);
    await screenshot(stack.page, 'session-01-limited-key');

    await nav(stack.page).getByRole('link', { name: 'Fixtures' }).click();
    const create = stack.page.locator('article', { has: stack.page.getByRole('heading', { name: 'minimal' }) }).getByRole('button', { name: 'Create order' });
    await expect.poll(() => create.isDisabled()).toBe(true);
    const reasonId = await create.getAttribute('aria-describedby');
    expect(await stack.page.locator(`[id="${reasonId}"]`).textContent()).toMatch(/lacks the orders:write scope/);

    await nav(stack.page).getByRole('link', { name: 'Events' }).click();
    await stack.page.getByText(/lacks the events:read scope/).waitFor();
    await stack.page.waitForTimeout(2_000);
    // No event read was even tried: the stream waits for the key's scopes and never asks without events:read.
    expect(recorder.calls.filter((c) => c === 'events.list' || c === 'console.eventDeliveries')).toEqual([]);
    recorder.stop();
    await forgetKey();
  });

  it('does not retry a 404 and offers no "Try again" where trying again cannot succeed', async () => {
    await openConsole(stack);
    const recorder = recordCalls();
    await stack.page.evaluate((id) => (window.location.hash = `/orders/${id}`), randomUUID());
    await stack.page.getByText(/This key has no order with id/).waitFor();
    await stack.page.waitForTimeout(1_500);
    expect(recorder.calls.filter((c) => c === 'orders.get')).toEqual(['orders.get']);
    expect(await stack.page.getByRole('button', { name: /Try again/ }).count()).toBe(0);
    recorder.stop();
  });

  it('lists orders by name, finds them by part of the external order id and by lifecycle, and copies ids', async () => {
    const { page } = stack;
    const tag = Date.now().toString(36);
    const alpha1 = await restOrder(`find-${tag}-alpha-1`);
    await restOrder(`find-${tag}-beta-2`);
    const alpha3 = await restOrder(`find-${tag}-alpha-3`);
    expect((await stack.rest('POST', `/v1/sandbox/orders/${alpha1}/simulate`, { json: { scenario: 'happy_path', steps: 3 } })).status).toBe(200);

    await nav(page).getByRole('link', { name: 'Orders' }).click();
    const rows = page.locator('table tbody tr');
    await page.getByLabel('External order id').fill(`${tag}-ALPHA`);
    await timed('orders list: type a search → filtered list', async () => {
      await expect.poll(() => rows.count()).toBe(2);
    });
    expect(await rows.first().textContent()).toMatch(new RegExp(`find-${tag}-alpha-3.*Complete Blood Count`));
    await page.getByLabel('Lifecycle').selectOption('active');
    await expect.poll(() => rows.allTextContents()).toEqual([expect.stringMatching(new RegExp(`find-${tag}-alpha-1.*active`))]);
    await page.getByLabel('Lifecycle').selectOption('completed');
    await page.getByText(/No order matches/).waitFor();
    await screenshot(page, 'session-02-orders-search');

    await page.getByLabel('Lifecycle').selectOption('');
    await page.getByRole('link', { name: `find-${tag}-alpha-3` }).click();
    const details = page.getByRole('article', { name: 'Order details' });
    await details.getByText('Complete Blood Count').waitFor();
    await details.getByRole('button', { name: 'Copy order id' }).click();
    expect(await clipboardText(page)).toBe(alpha3);
  });

  it('keeps events and results one tap away at 390 px wide, with nothing wider than the screen', async () => {
    const { page } = stack;
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(await overflow()).toBeLessThanOrEqual(0);
      await screenshot(page, 'session-03-order-narrow');
      await page.getByRole('navigation', { name: 'Sections of this order' }).getByRole('button', { name: 'Events' }).click();
      await expect.poll(() => page.getByRole('heading', { name: 'Events of this order' }).evaluate((h) => h.getBoundingClientRect().top)).toBeLessThan(844);
      await page.getByRole('navigation', { name: 'Sections of this order' }).getByRole('button', { name: 'Results' }).click();
      await expect.poll(() => page.getByRole('heading', { name: 'Results', exact: true }).evaluate((h) => h.getBoundingClientRect().top)).toBeLessThan(844);
      for (const screen of ['Overview', 'Orders', 'Events', 'Fixtures']) {
        await nav(page).getByRole('link', { name: screen }).click();
        await page.getByRole('heading', { level: 1, name: screen }).waitFor();
        expect(await overflow(), `${screen} is wider than 390 px`).toBeLessThanOrEqual(0);
      }
    } finally {
      await page.setViewportSize({ width: 1366, height: 768 });
    }
  });

  it('returns to the key screen with the reason when the key is revoked, and stops polling', async () => {
    const { page } = stack;
    const doomed = await stack.newKey();
    await forgetKey();
    await openConsole(stack, doomed.key);
    await nav(page).getByRole('link', { name: 'Events' }).click();
    await revokeKey(stack.database.db, doomed.key_id);
    await timed('revoked key: next poll → key screen with the reason', async () => {
      await page.getByRole('alert').filter({ hasText: 'The API key has been revoked.' }).waitFor({ timeout: 10_000 });
    });
    await page.getByLabel('Sandbox API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    const recorder = recordCalls();
    await page.waitForTimeout(3_000);
    expect(recorder.calls).toEqual([]);
    recorder.stop();
    await screenshot(page, 'session-04-revoked');
  });

  it('says so when the key expires while the console is open', async () => {
    const { page } = stack;
    const shortLived = await stack.newKey({ expiresAt: new Date(Date.now() + 4_000) });
    await openConsole(stack, shortLived.key);
    await page.getByRole('alert').filter({ hasText: 'The API key has expired.' }).waitFor({ timeout: 15_000 });
  });

  it('logged no browser error besides the refusals it provoked', () => {
    const expected = /status of (401|403|404)|^HTTP (401|403|404) /;
    expect(stack.browser.problems.filter((p) => !expected.test(p))).toEqual([]);
  });
});
