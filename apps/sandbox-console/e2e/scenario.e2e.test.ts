import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { screenshot } from './browser';
import { openConsole, startStack, timed, type Stack } from './harness';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack('scenario');
  await openConsole(stack);
});
afterAll(() => stack?.close());

async function restOrder(): Promise<{ orderId: string; externalOrderId: string }> {
  const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
  const externalOrderId = `scenario-${Date.now().toString(36)}`;
  const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: externalOrderId };
  const created = await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } });
  return { orderId: created.body.data.order_id, externalOrderId };
}

const simulate = (orderId: string, scenario: string, steps?: number) => stack.rest('POST', `/v1/sandbox/orders/${orderId}/simulate`, { json: { scenario, ...(steps ? { steps } : {}) } });

async function openOrder(page: Page, orderId: string, externalOrderId: string) {
  await page.goto(`${stack.api.url}/console/#/orders/${orderId}`);
  await page.getByRole('heading', { level: 1, name: externalOrderId }).waitFor();
}

const options = (page: Page) => page.getByLabel('Scenario', { exact: true }).locator('option').allTextContents();

describe('the scenario runner, driven by the server', () => {
  let orderId: string;
  let externalOrderId: string;

  it('offers every scenario on a new order, and names steps by where they lead (acknowledge → accepted, await collection → awaiting collection)', async () => {
    ({ orderId, externalOrderId } = await restOrder());
    await openOrder(stack.page, orderId, externalOrderId);
    await stack.page.getByText('0 of 9 steps done').waitFor();
    expect(await options(stack.page)).toHaveLength(8);
    const steps = (await stack.page.getByRole('list', { name: 'Steps of happy_path' }).locator('.step-name').allTextContents()).map((t) => t.replace(/ \((next|done)\)$/, ''));
    expect(steps.slice(0, 3)).toEqual(['transmit → transmitted', 'acknowledge → accepted', 'await collection → awaiting collection']);
  });

  it('shows steps applied elsewhere (the partner’s own call), offers only scenarios still possible, and keeps focus on the step button while it runs', async () => {
    const { page } = stack;
    expect((await simulate(orderId, 'happy_path', 3)).status).toBe(200);
    // A new tab knows nothing of this one: everything comes from the server.
    await openOrder(page, orderId, externalOrderId);
    await page.getByText('3 of 9 steps done').waitFor();
    expect(await options(page)).toEqual(['happy_path (3 of 9 done)']);
    expect(await page.locator('.step-done').count()).toBe(3);
    await page.getByText(/7 scenarios not offered from/).click();
    expect(await page.locator('details li').first().textContent()).toMatch(/partial_then_final.*starts from a newly created order/);

    const next = page.getByRole('button', { name: 'Run next step' });
    await next.focus();
    const focusDuring: string[] = [];
    await timed('order: keyboard Enter on Run next step → step applied', async () => {
      await page.keyboard.press('Enter');
      focusDuring.push((await page.evaluate(() => document.activeElement?.textContent)) ?? '');
      await page.getByText('4 of 9 steps done').waitFor();
    });
    expect(await page.evaluate(() => document.activeElement?.closest('[aria-label="Run the scenario"]') !== null)).toBe(true);
    expect(focusDuring[0]).toMatch(/Running…|Run next step/);
    await page.getByRole('status').filter({ hasText: 'Applied 1 step' }).waitFor();

    // Enter again from the keyboard, with no mouse: the focus is still there.
    await page.keyboard.press('Enter');
    await page.getByText('5 of 9 steps done').waitFor();
    await screenshot(page, 'scenario-01-in-progress');
  });

  it('keeps the step controls in view while the page scrolls', async () => {
    const { page } = stack;
    await page.getByRole('list', { name: 'Steps of happy_path' }).locator('li').last().scrollIntoViewIfNeeded();
    await page.mouse.wheel(0, 400);
    const box = await page.getByRole('group', { name: 'Run the scenario' }).boundingBox();
    const viewport = page.viewportSize()!;
    expect(box!.y).toBeGreaterThanOrEqual(-1);
    expect(box!.y + 40).toBeLessThanOrEqual(viewport.height);
  });

  it('clears a banner that the server’s state has overtaken', async () => {
    const { page } = stack;
    const banner = page.getByRole('status').filter({ hasText: 'Applied 1 step' });
    await banner.waitFor();
    // Another tab (here the partner's own code) runs the next step: this tab's banner no longer describes the order.
    expect((await simulate(orderId, 'happy_path', 1)).status).toBe(200);
    await page.getByText('6 of 9 steps done').waitFor({ timeout: 10_000 });
    await expect.poll(() => banner.count()).toBe(0);

    // And once finished here, the scenario is no longer offered; the order says it has run.
    expect((await simulate(orderId, 'happy_path')).status).toBe(200);
    await page.getByText('Every step of this scenario has run on this order.').waitFor({ timeout: 10_000 });
    expect(await options(page)).toEqual(['happy_path (completed)']);
    expect(await page.getByRole('button', { name: 'Run next step' }).getAttribute('aria-disabled')).toBe('true');
  });

  it('a cancelled order invites no scenario: the creation banner drops "Run a scenario", and the panel says why none applies', async () => {
    const { page } = stack;
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Fixtures' }).click();
    const card = page.locator('article', { has: page.getByRole('heading', { name: 'minimal', exact: true }) });
    await card.getByRole('button', { name: 'Create order' }).click();
    const banner = page.getByRole('status').filter({ hasText: /created from the minimal fixture/ });
    await banner.getByText(/Run a scenario to move it along\./).waitFor();
    await page.getByRole('heading', { level: 2, name: 'Run a scenario' }).waitFor();

    const cancel = page.getByRole('article', { name: 'Cancel the order' });
    await cancel.getByRole('button', { name: 'Cancel order…' }).click();
    await cancel.getByRole('button', { name: 'Yes, cancel this order' }).click();
    const why = 'This order is cancelled by partner, a final state: no scenario can move it any further. Every scenario starts from a newly created order (received): create one from a fixture to run a scenario.';
    await page.getByText(why).waitFor({ timeout: 10_000 });
    await page.getByRole('heading', { level: 2, name: 'Scenarios' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Run a scenario' }).count()).toBe(0);
    expect(await banner.textContent()).not.toContain('Run a scenario');
    expect(await page.getByText('No scenario is defined.').count()).toBe(0);

    // Opened afresh, a cancelled order reads the same.
    await page.reload();
    await page.getByText(why).waitFor();
    expect(await page.getByRole('heading', { name: 'Run a scenario' }).count()).toBe(0);
  });

  it('logged no browser error', () => {
    expect(stack.browser.problems).toEqual([]);
  });
});
