import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { ARTIFACTS } from './browser';
import { openConsole, startStack, timed, type Stack } from './harness';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack('docs');
});
afterAll(() => stack?.close());

describe('docs that run', () => {
  it('the reference lists this service as its server, so its curl sample runs as shown (with a key)', async () => {
    const { page } = stack;
    await timed('docs: open /docs → reference rendered', async () => {
      await page.goto(`${stack.api.url}/docs`);
      await page.getByRole('heading', { name: 'Laboratory Ordering Partner API' }).waitFor();
    });
    const sample = page.locator('pre', { hasText: /curl .*\/api\/public\/partner\/v1\/health/ }).first();
    await sample.waitFor();
    const curl = (await sample.textContent())!;
    expect(curl).toContain(`${stack.api.url}/api/public/partner/v1/health`);
    // The sample is copied as a reader would, with their key in place of Scalar's placeholder.
    const runnable = curl.replace(/Bearer [^'"\s]+/, `Bearer ${stack.key}`);
    const { stdout } = await promisify(execFile)('bash', ['-c', runnable]);
    expect(JSON.parse(stdout)).toMatchObject({ data: { status: 'ok', environment: 'sandbox' } });
  });

  it('hides Scalar’s AI, deploy, share, configure and developer-tools controls', async () => {
    const { page } = stack;
    for (const name of ['Ask AI', 'Deploy', 'Share', 'Configure', 'Developer Tools']) {
      expect(await page.getByRole('button', { name, exact: true }).count(), name).toBe(0);
      expect(await page.getByText(name, { exact: true }).count(), name).toBe(0);
    }
    // The first screen only: the whole reference is thousands of pixels tall.
    await page.screenshot({ path: join(ARTIFACTS, 'docs-01-reference.png') });
  });

  it('documents each event type’s webhook delivery, headers and body, in the reference', async () => {
    const { page } = stack;
    await page.getByRole('button', { name: /Webhooks/ }).first().click();
    await page.getByText('result.critical').first().waitFor();
    await page.getByText('result.final', { exact: true }).first().click();
    await page.getByText('x-partner-signature').first().waitFor();
  });

  it('links the reference and the console to each other', async () => {
    const { page } = stack;
    await page.goto(`${stack.api.url}/docs`);
    await page.getByRole('link', { name: 'sandbox console' }).first().click();
    await page.getByRole('heading', { name: 'Sandbox console' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/');
    await openConsole(stack);
    await page.getByRole('contentinfo').getByRole('link', { name: 'API reference' }).click();
    await page.getByRole('heading', { name: 'Laboratory Ordering Partner API' }).waitFor();
  });

  it('Test Request of "Create an order" works as shipped after the console: the sandbox key, real fixture ids, a fresh Idempotency-Key and a fresh external_order_id per try', async () => {
    const { page } = stack;
    // The previous test entered the key in the console, in this tab: /docs reads it from there.
    await page.goto(`${stack.api.url}/docs`);
    await page.getByRole('button', { name: 'Open Group - Orders' }).click();
    await page.getByText('Create an order', { exact: true }).first().click();
    const section = page.locator('section', { has: page.getByRole('heading', { name: 'Create an order' }) }).last();
    await section.getByText(/Test Request here: leave Idempotency-Key empty/).waitFor();
    const sent: { status: number; idempotencyKey?: string; body: any }[] = [];
    page.on('response', async (r) => {
      if (new URL(r.url()).pathname === '/api/public/partner/v1/orders') sent.push({ status: r.status(), idempotencyKey: r.request().headers()['idempotency-key'], body: await r.json() });
    });
    await section.getByRole('button', { name: /Test Request/ }).first().click();
    const client = page.getByRole('dialog');
    await timed('docs: Test Request → Send create order → 201', async () => {
      await client.getByRole('button', { name: /^Send/ }).first().click();
      await expect.poll(() => sent.length).toBe(1);
    });
    expect(sent[0].status).toBe(201);
    expect(sent[0].idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    const order = sent[0].body.data;
    expect(order.external_order_id).toMatch(/^docs-/);
    // The example's ids are the running sandbox's fixture, not the reference's placeholders.
    const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
    const minimal = fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body;
    expect([order.program_id, order.item_id]).toEqual([minimal.program_id, minimal.item_id]);
    expect((await stack.rest('GET', `/v1/orders/${order.order_id}`)).status).toBe(200);

    // A second try of the same example gets its own key and its own external_order_id: a second order, not 409 duplicate_external_order_id.
    await client.getByRole('button', { name: /^Send/ }).first().click();
    await expect.poll(() => sent.length).toBe(2);
    expect(sent[1].idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1].idempotencyKey).not.toBe(sent[0].idempotencyKey);
    expect(sent[1].status, JSON.stringify(sent[1].body)).toBe(201);
    expect(sent[1].body.data.external_order_id).toMatch(/^docs-/);
    expect(sent[1].body.data.external_order_id).not.toBe(order.external_order_id);
    expect(sent[1].body.data.order_id).not.toBe(order.order_id);
    await section.getByText(/external_order_id must be unique among your orders/).first().waitFor();
    // The reference uses the key for this tab only: nothing writes it where it would outlive the tab.
    expect(await page.evaluate(() => JSON.stringify(localStorage) + document.cookie)).not.toContain('lop_test_');
    await page.screenshot({ path: join(ARTIFACTS, 'docs-02-test-request.png') });
  });

  for (const viewport of [
    { width: 1366, height: 768 },
    { width: 390, height: 844 },
  ]) {
    it(`serves the partner guides from docs/, linked from the console and the reference — at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      // The console, with the key kept in this tab by an earlier test or entered now.
      await page.goto(`${stack.api.url}/console/`);
      const keyField = page.getByLabel('Sandbox API key');
      await keyField.or(page.getByRole('heading', { name: 'Overview' })).waitFor();
      if (await keyField.count()) await openConsole(stack);
      await timed(`console footer: Guides → guides listed (${viewport.width} px)`, async () => {
        await page.getByRole('contentinfo').getByRole('link', { name: 'Guides' }).click();
        await page.getByRole('heading', { level: 1, name: 'Guides' }).waitFor();
      });
      await page.getByRole('main').getByRole('link', { name: 'Webhooks and signature verification' }).click();
      await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
      await page.getByText('The secret is the key, whole.').waitFor();
      // The anchor the console's secret banner links to exists.
      expect(await page.locator('#verification-samples-tested').count()).toBe(1);
      expect(await page.locator('pre code.language-ts', { hasText: 'export function verifyWebhook(' }).count()).toBe(1);
      expect(await page.locator('pre code.language-python', { hasText: 'def verify_webhook(' }).count()).toBe(1);
      expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(ARTIFACTS, `docs-03-guide-webhooks-${viewport.width}.png`) });

      await page.getByRole('navigation', { name: 'Guides' }).getByRole('link', { name: 'Errors' }).click();
      await page.getByRole('heading', { level: 1, name: 'Errors' }).waitFor();
      await page.getByRole('banner').getByRole('link', { name: 'API reference' }).click();
      await page.getByRole('heading', { name: 'Laboratory Ordering Partner API' }).first().waitFor();
      await page.getByRole('banner').getByRole('link', { name: 'Guides' }).waitFor();
    });
  }
});

describe('the documents under their Content-Security-Policy', () => {
  it('serves /docs, its script and the guides with a CSP, frame-ancestors \'none\', X-Frame-Options and nosniff; no page allows inline script', async () => {
    for (const path of ['/docs', '/docs/scalar.js', '/docs/guides', '/docs/guides/webhooks']) {
      const response = await fetch(`${stack.api.url}${path}`);
      expect(response.status, path).toBe(200);
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toMatch(/script-src '(self|none)'/);
      expect(csp.match(/script-src [^;]*/)![0], path).not.toContain('unsafe');
      expect(response.headers.get('x-frame-options'), path).toBe('DENY');
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
  });

  it('the reference and the guides ran under it: the browser refused nothing (the tests above used Test Request, webhooks and the guides)', () => {
    expect(stack.browser.problems.filter((p) => /Content Security Policy|Refused to/i.test(p))).toEqual([]);
  });

  it('an inline script injected into /docs does not run', async () => {
    const { page } = stack;
    await page.goto(`${stack.api.url}/docs`);
    await page.getByRole('heading', { name: 'Laboratory Ordering Partner API' }).first().waitFor();
    const before = stack.browser.problems.length;
    // As an injection in the page would: a new inline script element.
    await page.evaluate(() => {
      const script = document.createElement('script');
      script.textContent = 'window.__injected = true';
      document.body.append(script);
    });
    expect(await page.evaluate(() => (window as unknown as { __injected?: boolean }).__injected ?? false)).toBe(false);
    expect(stack.browser.problems.slice(before).some((p) => /Content Security Policy/.test(p))).toBe(true);
    stack.browser.problems.splice(before);
  });
});
