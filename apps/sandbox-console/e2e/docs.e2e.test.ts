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
});
