import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenshot } from './browser';
import { clipboardText, nav, openConsole, startStack, timed, type Stack } from './harness';

/** A partner endpoint whose answer per event type the test decides as it goes. */
interface Endpoint {
  url: string;
  answers: Map<string, { status: number; body: string }>;
  received: { type: string; headers: Record<string, string | string[] | undefined>; body: string }[];
  close(): Promise<void>;
}

async function startEndpoint(): Promise<Endpoint> {
  const answers = new Map<string, { status: number; body: string }>();
  const received: Endpoint['received'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const parsed = JSON.parse(body) as { type?: string };
      // A test delivery is an event envelope like any other, flagged by its header (docs/webhooks.md).
      const type = req.headers['x-partner-test'] === 'true' ? 'test' : (parsed.type ?? 'unknown');
      received.push({ type, headers: req.headers, body });
      const answer = answers.get(type) ?? { status: 200, body: `received ${type}` };
      res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/partner/webhooks`,
    answers,
    received,
    close: () => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections())),
  };
}

let stack: Stack;
let endpoint: Endpoint;
let orderId: string;
beforeAll(async () => {
  // A failed attempt waits ten minutes for its retry: long enough to see it waiting, and to retry it now.
  stack = await startStack('webhooks', { worker: true, env: { PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS: '600,600,600,600,600,600' } });
  endpoint = await startEndpoint();
  // An order (and its order.created) from before any endpoint existed.
  const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
  const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: `webhooks-${Date.now().toString(36)}` };
  orderId = (await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } })).body.data.order_id;
  stack.page.on('dialog', (dialog) => void dialog.accept());
  await openConsole(stack);
});
afterAll(async () => {
  await stack?.close();
  await endpoint?.close();
});

const simulate = (steps: number) => stack.rest('POST', `/v1/sandbox/orders/${orderId}/simulate`, { json: { scenario: 'happy_path', steps } });
const log = () => stack.page.getByRole('list', { name: 'Deliveries, newest first' });
const entry = (type: string) => log().locator('li.delivery-entry', { has: stack.page.locator('code', { hasText: type }) });

describe('webhooks you can work with, in the sandbox', () => {
  let secret: string;

  it('registers an endpoint with chosen event types under the destination guard, and shows its secret once', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Events' }).click();
    await page.getByText('No webhook endpoint.').waitFor();
    await page.getByRole('link', { name: 'Add an endpoint' }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();

    await page.getByLabel('Endpoint URL').fill('https://10.0.0.7/hooks');
    await page.getByRole('button', { name: 'Register endpoint' }).click();
    await page.getByText(/This URL cannot receive webhooks: the destination is not public/).waitFor();

    await page.getByLabel('Endpoint URL').fill(endpoint.url);
    await page.getByLabel('all event types').uncheck();
    for (const type of ['order.created', 'order.updated', 'specimen.updated', 'result.final']) await page.getByLabel(type, { exact: true }).check();
    await timed('webhooks: Register endpoint → secret shown', async () => {
      await page.getByRole('button', { name: 'Register endpoint' }).click();
      await page.getByRole('region', { name: 'Signing secret' }).waitFor();
    });
    await page.getByRole('button', { name: 'Copy secret' }).click();
    secret = await clipboardText(page);
    expect(secret).toMatch(/^whsec_/);
    expect(await page.locator('h1').textContent()).toBe(endpoint.url);
    await screenshot(page, 'webhooks-01-secret-once');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.reload();
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    expect(await page.getByRole('region', { name: 'Signing secret' }).count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
  });

  it('sends a test event and shows the request as sent (its signature verifies with the secret) and the first 2 KB of the answer', async () => {
    const { page } = stack;
    endpoint.answers.set('test', { status: 200, body: `ok ${'z'.repeat(3000)}` });
    await timed('webhooks: Send test event → result shown', async () => {
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page.getByText(/Test event delivered: your endpoint answered 200/).waitFor();
    });
    const test = entry('test event').first();
    await test.getByRole('button', { name: /test event/ }).click();
    await test.getByRole('button', { name: /Attempt 1/ }).click();
    const request = (await test.getByLabel('Request of attempt 1').textContent())!;
    const [head, body] = request.split('\n\n');
    const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(head)![1];
    expect(head.split('\n')[0]).toBe(`POST ${endpoint.url}`);
    const expected = `v1=${createHmac('sha256', secret).update(`${header('x-partner-timestamp')}.${body}`).digest('hex')}`;
    expect(header('x-partner-signature')).toBe(expected);
    expect(body).toBe(endpoint.received.find((r) => r.type === 'test')!.body);
    const response = (await test.getByLabel('Response of attempt 1').textContent())!;
    expect(response).toBe(`ok ${'z'.repeat(2045)}`);
    await test.getByText('(it was longer)').waitFor();
  });

  it('shows failures as failures: a dead letter, a delivery retrying, each with its next attempt; retry now and recover fix them', async () => {
    const { page } = stack;
    endpoint.answers.set('order.updated', { status: 503, body: 'maintenance' });
    endpoint.answers.set('specimen.updated', { status: 410, body: 'gone' });
    // transmit, acknowledge (order.updated), await collection, collect (specimen.updated, order.updated).
    expect((await simulate(4)).status).toBe(200);
    await page.getByRole('button', { name: 'Failing', exact: true }).click();
    const dead = entry('specimen.updated').first();
    await dead.locator('.badge', { hasText: 'dead letter' }).waitFor({ timeout: 20_000 });
    expect(await dead.getAttribute('class')).toContain('is-failed');
    const retrying = entry('order.updated').first();
    await retrying.locator('.badge', { hasText: 'retrying' }).waitFor({ timeout: 20_000 });
    expect(await retrying.getAttribute('class')).toContain('is-retrying');
    await retrying.getByText(/next attempt in (9|10) minutes/).waitFor();
    await screenshot(page, 'webhooks-02-failing');

    // acknowledge and collect each emitted an order.updated: both wait for their retry.
    await expect.poll(() => entry('order.updated').count(), { timeout: 15_000 }).toBe(2);
    endpoint.answers.set('order.updated', { status: 200, body: 'fine now' });
    await timed('webhooks: Retry now → delivered', async () => {
      await retrying.getByRole('button', { name: 'Retry now' }).click();
      await expect.poll(() => entry('order.updated').count(), { timeout: 15_000 }).toBe(1);
    });
    await entry('order.updated').getByRole('button', { name: 'Retry now' }).click();
    await page.getByRole('button', { name: 'All', exact: true }).click();
    await expect.poll(() => log().locator('li.delivery-entry[data-state="pending"]').count(), { timeout: 15_000 }).toBe(0);

    endpoint.answers.set('specimen.updated', { status: 204, body: '' });
    await timed('webhooks: Recover since → dead letters replayed and delivered', async () => {
      await page.getByRole('button', { name: 'Recover' }).click();
      await page.getByText('Replaying 1 event as new deliveries.').waitFor();
      await expect.poll(() => log().locator('li.delivery-entry[data-state="pending"]').count(), { timeout: 15_000 }).toBe(0);
    });
    const replay = log().locator('li.delivery-entry[data-state="delivered"]', { has: page.getByText('replay') }).first();
    expect(await replay.textContent()).toContain('specimen.updated');
    await page.getByRole('button', { name: 'Dead letters', exact: true }).click();
    await dead.waitFor();
  });

  it('resends a delivered event as a new delivery', async () => {
    const { page } = stack;
    await page.getByRole('button', { name: 'Delivered', exact: true }).click();
    const before = endpoint.received.length;
    await entry('order.updated').first().getByRole('button', { name: 'Resend' }).click();
    await expect.poll(() => endpoint.received.length, { timeout: 15_000 }).toBe(before + 1);
    expect(endpoint.received.at(-1)!.type).toBe('order.updated');
  });

  it('on the event stream: an event from before the endpoint says so, and failed deliveries look like failures', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Events' }).click();
    const created = page.locator('.timeline-item[data-type="order.created"]');
    await created.getByText(/no webhook: before your endpoint existed/).waitFor({ timeout: 10_000 });
    const specimen = page.locator('.timeline-item[data-type="specimen.updated"]').first();
    // Recovered above: still a failure that happened, said to be recovered.
    await specimen.locator('.badge-bad', { hasText: 'webhook dead lettered · recovered' }).waitFor({ timeout: 10_000 });
    await screenshot(page, 'webhooks-03-events');
  });

  it('rotates the secret (shown once again) and disables the endpoint', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('link', { name: endpoint.url }).click();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const shown = page.getByRole('region', { name: 'Signing secret' });
    await shown.waitFor();
    const rotated = (await shown.locator('code.secret').textContent())!;
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.locator('.page-header .badge', { hasText: 'disabled' }).waitFor();
    expect(await page.getByRole('button', { name: 'Send test event' }).isDisabled()).toBe(true);
  });

  it('logged no browser error besides the refused URL it provoked', () => {
    expect(stack.browser.problems.filter((p) => !/status of 400|^HTTP 400 POST .*console\.webhooks\.create/.test(p))).toEqual([]);
  });
});
