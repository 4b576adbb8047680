import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger, startPartnerApi, type RunningApi } from '@lop/partner-api';
import { ensureConsoleBuilt } from '../ensure-built';
import { screenshot } from './browser';
import { nav, openConsole, startStack, timed, type Stack } from './harness';

/** Issue 24, item 7: the console shows the real connection state while the API is down, recovers by itself, and can share its key across tabs. */
let stack: Stack;
let restarted: RunningApi | undefined;
beforeAll(async () => {
  stack = await startStack('outage');
});
afterAll(async () => {
  await restarted?.close();
  await stack?.close();
});

async function restOrder(externalOrderId: string): Promise<string> {
  const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
  const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: externalOrderId };
  const created = await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } });
  expect(created.status).toBe(201);
  return created.body.data.order_id as string;
}

describe('an API outage', () => {
  it('turns "Live" into "Not connected" while the API is down, and every view recovers by itself when it returns', async () => {
    const { page } = stack;
    await openConsole(stack);
    const x = await restOrder(`outage-x-${Date.now()}`);
    const y = await restOrder(`outage-y-${Date.now()}`);
    await page.evaluate((id) => (window.location.hash = `/orders/${id}`), x);
    const events = page.getByRole('complementary', { name: 'Events of this order' });
    await events.getByText('Live from the event stream').waitFor();
    expect(await events.locator('.live-dot').getAttribute('class')).toContain('is-live');

    // The API goes away (the page stays open, as a reader's tab does).
    const port = Number(new URL(stack.api.url).port);
    await stack.api.close();
    await timed('outage: API stopped → "Not connected" shown', async () => {
      await events.getByText(/Not connected: the API cannot be reached/).waitFor({ timeout: 15_000 });
    });
    expect(await events.locator('.live-dot').getAttribute('class')).toContain('is-down');
    expect(await page.getByRole('contentinfo').textContent()).toContain('Not connected');
    // A view opened meanwhile fails, and says it will try again by itself.
    await page.evaluate((id) => (window.location.hash = `/orders/${id}`), y);
    await page.getByText(/tries again by itself/).first().waitFor({ timeout: 15_000 });
    await screenshot(page, 'outage-01-down');

    // The API returns on the same address: nothing is clicked.
    const { dir } = await ensureConsoleBuilt();
    restarted = await startPartnerApi({ config: { ...stack.config, PORT: port }, databaseUrl: inject('databaseUrl'), logger: createLogger(stack.config, 'console-e2e-outage'), consoleDir: dir });
    await timed('outage: API back → order view and scenario panel recovered by themselves', async () => {
      await page.getByRole('heading', { level: 1, name: /^outage-y-/ }).waitFor({ timeout: 20_000 });
      await page.getByRole('button', { name: 'Run first step' }).waitFor({ timeout: 20_000 });
      await page.getByRole('complementary', { name: 'Events of this order' }).getByText('Live from the event stream').waitFor({ timeout: 20_000 });
    });
    expect(await page.getByText('Something went wrong.').count()).toBe(0);
  });
});

describe('the key across tabs', () => {
  it('a second tab asks again unless the reader chose to share the key; forgetting it in one sharing tab forgets it in all', async () => {
    const { page, browser } = stack;
    // Not shared (the default): a second tab asks.
    const second = await browser.context.newPage();
    await second.goto(`${restarted!.url}/console/`);
    await second.getByLabel('Sandbox API key').waitFor();
    await second.close();

    await page.getByRole('button', { name: 'Forget key' }).click();
    await page.getByLabel('Sandbox API key').fill(stack.key);
    await page.getByLabel(/Share it with my other console tabs/).check();
    await page.keyboard.press('Enter');
    await nav(page).waitFor();

    const third = await browser.context.newPage();
    await timed('second tab of a shared key → console open without asking', async () => {
      await third.goto(`${restarted!.url}/console/`);
      await third.getByRole('heading', { name: 'Overview' }).waitFor();
    });
    expect(await third.getByLabel('Sandbox API key').count()).toBe(0);
    // Never written where it would outlive the tabs.
    expect(await third.evaluate(() => JSON.stringify(localStorage) + document.cookie)).not.toContain('lop_test_');

    // Another page of the origin (the reference) asks the sharing tabs too, and overhears their answers: it gets no key.
    const docs = await browser.context.newPage();
    await docs.goto(`${restarted!.url}/docs`);
    const heard = await docs.evaluate(
      () =>
        new Promise<{ messages: string[]; cookie: string }>((resolve) => {
          const messages: string[] = [];
          const channel = new BroadcastChannel('lop.sandbox-console.keys');
          channel.onmessage = (event) => messages.push(JSON.stringify(event.data));
          channel.postMessage({ type: 'ask', id: 'docs-page' });
          setTimeout(() => {
            channel.close();
            resolve({ messages, cookie: document.cookie });
          }, 1500);
        }),
    );
    // The sharing tabs answered (sealed), and nothing heard holds the key or the secret that opens it.
    expect(heard.messages.some((m) => m.includes('"type":"key"'))).toBe(true);
    expect(heard.messages.join('\n')).not.toContain(stack.key);
    expect(heard.cookie).not.toContain('lop_console_share');
    // A forged "forget" signs nobody out.
    await docs.evaluate(() => new BroadcastChannel('lop.sandbox-console.keys').postMessage({ type: 'forget', id: 'docs-page', iv: 'AAAAAAAAAAAAAAAA', sealed: 'AAAA' }));
    await docs.close();
    await page.waitForTimeout(300);
    expect(await page.getByLabel('Sandbox API key').count()).toBe(0);

    await third.getByRole('button', { name: 'Forget key' }).click();
    await page.getByLabel('Sandbox API key').waitFor();
    await third.close();
  });

  it('logged no browser error besides the outage it caused', () => {
    expect(stack.browser.problems.filter((p) => !/ERR_CONNECTION_REFUSED|Failed to fetch|Failed to load resource/.test(p))).toEqual([]);
  });
});
