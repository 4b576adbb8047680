import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { screenshot } from './browser';
import { clipboardText, nav, openConsole, startStack, timed, type Stack } from './harness';

/** Issue 24, item 6: versions labelled, outcomes brought into view, refusals in the API's own words, snippets honest about their Idempotency-Key. */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack('reading');
  await openConsole(stack);
});
afterAll(() => stack?.close());

const inViewport = (locator: Locator) =>
  locator.evaluate((element) => {
    const box = element.getBoundingClientRect();
    // Within a pixel: layout boxes have fractional edges.
    return box.top >= -1 && box.bottom <= window.innerHeight + 1;
  });
const focusedWithin = (locator: Locator) => locator.evaluate((element) => element.contains(document.activeElement));

async function editMinimal(page: Page, change: (body: Record<string, unknown>) => Record<string, unknown>): Promise<Locator> {
  await nav(page).getByRole('link', { name: 'Overview' }).click();
  await nav(page).getByRole('link', { name: 'Fixtures' }).click();
  const card = page.locator('article', { has: page.getByRole('heading', { name: 'minimal', exact: true }) });
  await card.getByRole('button', { name: 'Edit request body' }).click();
  const editor = card.getByLabel('Request body (sent exactly as shown)');
  await editor.fill(JSON.stringify(change(JSON.parse(await editor.inputValue())), null, 2));
  return card;
}

describe('reading and feedback', () => {
  it('labels the API version (v1) and the service build apart, on the overview and in the footer', async () => {
    const { page } = stack;
    await page.getByText('Service build', { exact: true }).waitFor();
    const text = (await page.getByRole('article', { name: 'Environment' }).locator('dl.facts').textContent())!;
    expect(text).toMatch(/API version\s*v1/);
    expect(text).toMatch(/Service build\s*0\.1\.0/);
    expect(await page.getByRole('contentinfo').textContent()).toContain('API v1 · service build 0.1.0');
  });

  for (const viewport of [
    { width: 1366, height: 768 },
    { width: 390, height: 844 },
  ]) {
    it(`brings a refused create into view and focus, listing the accepted billing modes — at ${viewport.width} px`, async () => {
      const { page } = stack;
      await page.setViewportSize(viewport);
      const card = await editMinimal(page, (body) => ({ ...body, region: 'US-NY', billing_mode: undefined }));
      const refusal = card.getByRole('alert').filter({ hasText: 'The order was not created.' });
      await timed(`fixtures: create refused (422) → refusal in view and focused (${viewport.width} px)`, async () => {
        await card.getByRole('button', { name: 'Create order' }).click();
        await refusal.waitFor();
      });
      expect(await refusal.textContent()).toContain('Accepted billing modes: client_bill, insurance, self_pay.');
      await expect.poll(() => inViewport(refusal)).toBe(true);
      await expect.poll(() => focusedWithin(card.locator('div.focus-target'))).toBe(true);
      await screenshot(page, `create-refused-${viewport.width}`);
    });
  }

  it('says a too-long field in the API’s own words, not Zod’s', async () => {
    const { page } = stack;
    await page.setViewportSize({ width: 1366, height: 768 });
    const card = await editMinimal(page, (body) => ({ ...body, external_subject_id: 's'.repeat(191) }));
    await card.getByRole('button', { name: 'Create order' }).click();
    const refusal = card.getByRole('alert').filter({ hasText: 'The order was not created.' });
    await refusal.waitFor();
    const text = (await refusal.textContent())!;
    expect(text).toContain('external_subject_id too_long — Must be at most 190 characters long.');
    expect(text).not.toMatch(/Too big|expected string/);
  });

  it('shows "Order … created" in view and focused on the order page', async () => {
    const { page } = stack;
    const card = await editMinimal(page, (body) => body);
    await timed('fixtures: Create order → created banner in view and focused', async () => {
      await card.getByRole('button', { name: 'Create order' }).click();
      await page.getByRole('status').filter({ hasText: /created from the minimal fixture/ }).waitFor();
    });
    const banner = page.getByRole('status').filter({ hasText: /created from the minimal fixture/ });
    await expect.poll(() => focusedWithin(banner)).toBe(true);
    expect(await inViewport(banner)).toBe(true);
  });

  it('says the snippets repeat the Idempotency-Key sent, and offers a fresh one', async () => {
    const { page } = stack;
    const inspector = page.getByRole('region', { name: 'The request that created this order' });
    await inspector.getByRole('button', { name: /partner request/ }).click();
    const sent = /Idempotency-Key: ([0-9a-f-]{36})/.exec((await inspector.getByLabel('Request', { exact: true }).textContent())!)![1];
    const note = inspector.getByRole('group', { name: 'Idempotency-Key of the snippets' });
    expect(await note.textContent()).toContain(`same Idempotency-Key as this request (${sent})`);
    await inspector.getByRole('button', { name: 'Copy as curl' }).click();
    expect(await clipboardText(page)).toContain(`Idempotency-Key: ${sent}`);

    await note.getByRole('button', { name: 'Use a fresh key' }).click();
    expect(await note.textContent()).toContain('fresh Idempotency-Key');
    await inspector.getByRole('button', { name: 'Copy as curl' }).click();
    const curl = await clipboardText(page);
    const fresh = /Idempotency-Key: ([0-9a-f-]{36})/.exec(curl)![1];
    expect(fresh).not.toBe(sent);
    expect(await note.textContent()).toContain(fresh);
    // What is sent in the request view is still what was sent.
    expect(await inspector.getByLabel('Request', { exact: true }).textContent()).toContain(`Idempotency-Key: ${sent}`);
  });

  it('logged no browser error besides the refusals asked for', () => {
    expect(stack.browser.problems.filter((p) => !/status of 4(00|22)|HTTP 4(00|22) POST .*orders\.create/.test(p))).toEqual([]);
  });
});
