import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { orders } from '@lop/db';
import { screenshot } from './browser';
import { clipboardText, nav, openConsole, startStack, timed, type Stack } from './harness';

const REPO = join(import.meta.dirname, '../../..');

let stack: Stack;
beforeAll(async () => {
  stack = await startStack('inspector');
  await openConsole(stack);
});
afterAll(() => stack?.close());

/** Runs a copied snippet the way a partner would, with the key in PARTNER_API_KEY (asynchronously: the API answers from this process). */
async function run(command: string, args: string[], cwd = REPO): Promise<string> {
  // Without the FORCE_COLOR Nx sets for its tasks: the samples' output is read as plain text.
  const { FORCE_COLOR: _colour, ...env } = process.env;
  const { stdout } = await promisify(execFile)(command, args, { cwd, env: { ...env, PARTNER_API_KEY: stack.key }, encoding: 'utf8', timeout: 60_000 });
  return stdout;
}

describe('the request inspector', () => {
  const externalOrderId = `inspector-${Date.now()}`;
  let orderId: string;

  it('shows the fixture request before sending; the body is editable and what is shown is what is sent; a double click creates one order', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Fixtures' }).click();
    const card = page.locator('article', { has: page.getByRole('heading', { name: 'minimal' }) });
    await card.getByRole('button', { name: 'Edit request body' }).click();
    const editor = card.getByLabel('Request body (sent exactly as shown)');
    const original = JSON.parse(await editor.inputValue()) as Record<string, unknown>;
    expect(original.external_order_id).toMatch(/^console-minimal-/);
    await editor.fill(JSON.stringify({ ...original, external_order_id: externalOrderId }, null, 2));

    const inspector = card.getByRole('region', { name: /Create order request/ });
    await inspector.getByRole('button', { name: /partner request/ }).click();
    const request = await inspector.getByLabel('Request', { exact: true }).textContent();
    expect(request).toContain(`POST ${stack.api.url}/api/public/partner/v1/orders`);
    expect(request).toMatch(/Idempotency-Key: [0-9a-f-]{36}/);
    expect(request).toContain(`"external_order_id": "${externalOrderId}"`);
    // Masked: the key's prefix only.
    expect(request).toMatch(/Authorization: Bearer lop_test_\w{4}…/);
    expect(request).not.toContain(stack.key);
    await screenshot(page, 'inspector-01-fixture-preview');

    const creates: string[] = [];
    page.on('request', (r) => r.url().includes('/api/trpc/orders.create') && creates.push(r.url()));
    await timed('fixtures: double-click Create order → order page shown', async () => {
      await card.getByRole('button', { name: 'Create order' }).dblclick();
      await page.getByRole('heading', { level: 1, name: externalOrderId }).waitFor();
    });
    orderId = page.url().split('/orders/')[1];
    const rows = await stack.database.db.select().from(orders).where(and(eq(orders.clientId, stack.clientId), eq(orders.externalOrderId, externalOrderId)));
    expect(rows.map((r) => r.id)).toEqual([orderId]);
    expect(creates).toHaveLength(1);
  });

  it('shows the create as REST on the order page and copies it as curl, TypeScript and Python that run', async () => {
    const { page } = stack;
    const inspector = page.getByRole('region', { name: 'The request that created this order' });
    await inspector.getByRole('button', { name: /partner request/ }).click();
    await inspector.getByText('201 Created').first().waitFor();
    const requestId = await inspector.locator('code.request-id').textContent();
    expect(requestId).toMatch(/^req_/);
    expect(await inspector.getByLabel('Response', { exact: true }).textContent()).toContain(`"order_id": "${orderId}"`);
    await screenshot(page, 'inspector-02-created-order');

    // curl: the same key and body again is an idempotent replay of the same order, so the copy is exactly what was sent.
    await inspector.getByRole('button', { name: 'Copy as curl' }).click();
    await inspector.getByText('Copied').waitFor();
    const curl = await clipboardText(page);
    expect(curl).toContain('$PARTNER_API_KEY');
    const replay = JSON.parse(await run('bash', ['-c', curl])) as { data: { order_id: string } };
    expect(replay.data.order_id).toBe(orderId);

    await inspector.getByRole('button', { name: 'Python', exact: true }).click();
    await inspector.getByRole('button', { name: 'Copy as Python' }).click();
    const python = await clipboardText(page);
    expect(python).toContain('urllib.request.urlopen(');
    // -I -S: no site-packages, so the copy provably needs nothing beyond Python's standard library.
    expect(await run('python3', ['-I', '-S', '-c', python])).toMatch(new RegExp(`^201 [\\s\\S]*${orderId}`));

    await inspector.getByRole('button', { name: 'TypeScript', exact: true }).click();
    await inspector.getByRole('button', { name: 'Copy as TypeScript' }).click();
    const typescript = await clipboardText(page);
    expect(typescript).toContain("client.POST('/api/public/partner/v1/orders'");
    // Its only import besides openapi-fetch is a type import, which tsx erases.
    const dir = join(REPO, 'tmp');
    const file = join(dir, `.inspector-snippet-${process.pid}.ts`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, typescript);
    try {
      expect(await run(process.execPath, ['--import', 'tsx', file])).toMatch(new RegExp(`^201 [\\s\\S]*${orderId}`));
    } finally {
      rmSync(file, { force: true });
    }
  });

  it('shows a simulation and the results read as REST, and a GET copied as curl runs', async () => {
    const { page } = stack;
    await page.getByLabel('Scenario', { exact: true }).selectOption('happy_path');
    await timed('order: run one scenario step → applied', async () => {
      await page.getByRole('button', { name: 'Run first step' }).click();
      await page.getByText(/^1 of \d+ steps done/).waitFor();
    });
    const simulate = page.getByRole('region', { name: 'Simulate request' });
    await simulate.getByRole('button', { name: /partner request/ }).click();
    const request = await simulate.getByLabel('Request', { exact: true }).textContent();
    expect(request).toContain(`POST ${stack.api.url}/api/public/partner/v1/sandbox/orders/${orderId}/simulate`);
    expect(request).toContain('"scenario": "happy_path"');
    await simulate.getByText('200 OK').first().waitFor();

    const results = page.getByRole('region', { name: 'Results request' });
    await results.getByRole('button', { name: /partner request/ }).click();
    await results.getByRole('button', { name: 'Copy as curl' }).click();
    const curl = await clipboardText(page);
    expect(curl).toContain(`-X GET '${stack.api.url}/api/public/partner/v1/orders/${orderId}/results'`);
    expect(JSON.parse(await run('bash', ['-c', curl]))).toMatchObject({ data: { order_id: orderId } });
  });

  it('shows the event stream read with its cursor', async () => {
    const { page } = stack;
    await timed('events page: open → first events listed', async () => {
      await nav(page).getByRole('link', { name: 'Events' }).click();
      await page.locator('.timeline-item').first().waitFor();
    });
    const inspector = page.getByRole('region', { name: 'Event stream request' });
    await inspector.getByRole('button', { name: /partner request/ }).click();
    await expect.poll(() => inspector.getByLabel('Request', { exact: true }).textContent()).toMatch(/^GET .*\/api\/public\/partner\/v1\/events\?cursor=[^&\s]+&limit=200/);
    await screenshot(page, 'inspector-03-events');
  });

  it('logged no browser error', () => {
    expect(stack.browser.problems).toEqual([]);
  });
});
