import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenshot } from './browser';
import { nav, openConsole, startStack, timed, type Stack } from './harness';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack('results');
  await openConsole(stack);
});
afterAll(() => stack?.close());

/** A minimal-fixture order (a complete blood count) walked through a whole scenario over REST, as a partner would. */
async function orderThrough(scenario: string): Promise<{ orderId: string; externalOrderId: string }> {
  const fixtures = await stack.rest('GET', '/v1/sandbox/order-fixtures');
  const externalOrderId = `results-${scenario}-${Date.now().toString(36)}`;
  const body = { ...fixtures.body.data.find((f: { contract: string }) => f.contract === 'minimal').body, external_order_id: externalOrderId };
  const created = await stack.rest('POST', '/v1/orders', { json: body, headers: { 'idempotency-key': randomUUID() } });
  expect(created.status).toBe(201);
  const orderId = created.body.data.order_id as string;
  expect((await stack.rest('POST', `/v1/sandbox/orders/${orderId}/simulate`, { json: { scenario } })).status).toBe(200);
  return { orderId, externalOrderId };
}

const openOrder = async (orderId: string, externalOrderId: string) => {
  await stack.page.evaluate((id) => (window.location.hash = `/orders/${id}`), orderId);
  await stack.page.getByRole('heading', { level: 1, name: externalOrderId }).waitFor();
};

describe('results a clinician-facing engineer can read', () => {
  it('reads analyte, value, unit, reference interval, flag in that order, exactly as supplied, and says what changed between versions', async () => {
    const { page } = stack;
    const { orderId, externalOrderId } = await orderThrough('corrected_result');
    await timed('order page: open an order with two result versions → both tables shown', async () => {
      await openOrder(orderId, externalOrderId);
      await page.getByRole('article', { name: 'Result version 1' }).locator('table.observations').waitFor();
    });
    const v2 = page.getByRole('article', { name: 'Result version 2' });
    const headers = await v2.locator('table.observations th').allTextContents();
    expect(headers.slice(0, 5)).toEqual(['Analyte', 'Value', 'Unit', 'Reference interval', 'Flag']);
    expect(headers.at(-1)).toBe('loinc');

    const hgb = v2.locator('table.observations tbody tr', { hasText: 'Hemoglobin' });
    expect(await hgb.getAttribute('data-severity')).toBe('abnormal');
    const cells = await hgb.locator('td').allTextContents();
    expect(cells.slice(1, 5)).toEqual(['12.6', 'g/dL', '13.0-17.7', 'L']);
    const v1 = page.getByRole('article', { name: 'Result version 1' });
    expect(await v1.locator('table.observations tbody tr', { hasText: 'Red Blood Cell Count' }).locator('td').nth(1).textContent()).toBe('4.71');
    // A low value points down; a normal row's supplied null flag is an empty cell, not a "null" chip.
    expect(await hgb.locator('.severity-mark').textContent()).toBe('▼ abnormal, low: ');
    const normalFlag = v1.locator('table.observations tbody tr', { hasText: 'Red Blood Cell Count' }).locator('td').nth(4);
    expect(await normalFlag.textContent()).toBe('—empty');
    expect(await v1.locator('table.observations code', { hasText: 'null' }).count()).toBe(0);

    const changed = await v2.getByRole('region', { name: 'What changed from v1 to v2' }).textContent();
    expect(changed).toContain('HGB (Hemoglobin) value 14.2 → 12.6');
    expect(changed).toContain('HGB (Hemoglobin) flag');
    expect(changed).toMatch(/HGB \(Hemoglobin\) comment added: Corrected result; previously reported as 14\.2 g\/dL\./);
    expect(changed).not.toContain('WBC');
    await v2.screenshot({ path: `${import.meta.dirname}/../../../test-artifacts/console/results-01-what-changed.png` });

    // No report document for this scenario: said so, never fabricated.
    await v2.getByRole('button', { name: 'Open the report' }).click();
    await v2.getByText(/No report document for this version/).waitFor();
  });

  it('marks a critical result on the order header, in its rows and in the orders list', async () => {
    const { page } = stack;
    const { orderId, externalOrderId } = await orderThrough('critical_result');
    await openOrder(orderId, externalOrderId);
    const banner = page.getByRole('region', { name: 'Critical result' });
    await banner.waitFor();
    expect(await banner.textContent()).toContain('HGB (Hemoglobin) 6.1 g/dL LL');
    const row = page.getByRole('article', { name: 'Result version 1' }).locator('tr[data-severity="critical"]');
    expect(await row.count()).toBe(1);
    await screenshot(page, 'results-02-critical');

    await nav(page).getByRole('link', { name: 'Orders' }).click();
    const listed = page.getByRole('row', { name: new RegExp(externalOrderId) });
    await listed.waitFor();
    expect(await listed.textContent()).toContain('critical result');
    expect(await page.getByRole('row', { name: /results-corrected_result-/ }).textContent()).not.toContain('critical');
  });

  it('opens the report document through its retrieval_path, with the same key', async () => {
    const { page } = stack;
    const { orderId, externalOrderId } = await orderThrough('report_available');
    await openOrder(orderId, externalOrderId);
    const report = page.getByRole('region', { name: 'Report of version 1' });
    await timed('order page: Open the report → document ready', async () => {
      await report.getByRole('button', { name: 'Open the report' }).click();
      await report.getByText('application/pdf').waitFor();
    });
    const href = await report.getByRole('link', { name: 'Download' }).getAttribute('href');
    const head = await page.evaluate(async (url) => new TextDecoder().decode((await (await fetch(url!)).arrayBuffer()).slice(0, 5)), href);
    expect(head).toBe('%PDF-');
    const retrievalPath = await report.locator('code').first().textContent();
    expect(retrievalPath).toMatch(new RegExp(`^/v1/orders/${orderId}/results/[0-9a-f-]{36}/report/document\\?retrieval_id=[0-9a-f-]{36}$`));
    const inspector = report.getByRole('region', { name: 'Report document request, version 1' });
    await inspector.getByRole('button', { name: /partner request/ }).click();
    expect(await inspector.getByLabel('Request', { exact: true }).textContent()).toContain(`GET ${stack.api.url}/api/public/partner${retrievalPath}`);
    await screenshot(page, 'results-03-report');
  });

  it('shows the FHIR R4 view of a version beside it, values exactly as in its table, with the partner request in the inspector', async () => {
    const { page } = stack;
    const { orderId, externalOrderId } = await orderThrough('partial_then_final');
    await openOrder(orderId, externalOrderId);
    // The partial version's rows say preliminary (the data, not the view, said final); the final version's say final.
    const statusOf = async (version: number) => {
      const table = page.getByRole('article', { name: `Result version ${version}` }).locator('table.observations');
      // allTextContents reads what is there now: wait for the version's rows first.
      await table.locator('tbody tr').first().waitFor();
      const column = (await table.locator('th').allTextContents()).indexOf('result_status') + 1;
      expect(column).toBeGreaterThan(0);
      return new Set(await table.locator(`tbody tr td:nth-child(${column})`).allTextContents());
    };
    expect(await statusOf(1)).toEqual(new Set(['preliminary']));
    expect(await statusOf(2)).toEqual(new Set(['final']));
    const v2 = page.getByRole('article', { name: 'Result version 2' });
    const fhir = v2.getByRole('region', { name: 'FHIR view of version 2' });
    const shown = fhir.getByLabel('FHIR Bundle of version 2');
    await timed('order page: Show FHIR R4 → the Bundle shown', async () => {
      await fhir.getByRole('button', { name: 'Show FHIR R4' }).click();
      await shown.waitFor();
    });
    const bundle = JSON.parse((await shown.textContent())!);
    const resources = bundle.entry.map((e: { resource: Record<string, any> }) => e.resource);
    expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'collection' });
    expect(resources[0]).toMatchObject({ resourceType: 'DiagnosticReport', status: 'final' });
    // A plain decimal is a valueQuantity (its comparator before it); the panel shows the parsed number.
    const values = resources
      .filter((r: Record<string, any>) => r.resourceType === 'Observation')
      .map((r: Record<string, any>) => r.valueString ?? `${r.valueQuantity.comparator ?? ''}${r.valueQuantity.value}`);
    expect(values).toEqual(await v2.locator('table.observations tbody tr td:nth-child(2)').allTextContents());
    expect(await fhir.textContent()).toContain('DiagnosticReport final · 5 Observations · Specimen');

    const inspector = fhir.getByRole('region', { name: 'FHIR request, version 2' });
    await inspector.getByRole('button', { name: /partner request/ }).click();
    const resultId = resources[0].identifier[0].value;
    expect(await inspector.getByLabel('Request', { exact: true }).textContent()).toContain(`GET ${stack.api.url}/api/public/partner/v1/orders/${orderId}/results/${resultId}/fhir`);
    expect(await inspector.getByLabel('Response', { exact: true }).textContent()).toContain('content-type: application/fhir+json; fhirVersion=4.0');
    await screenshot(page, 'results-04-fhir');
  });

  it('logged no browser error besides the report 404 it asked for', () => {
    expect(stack.browser.problems.filter((p) => !/status of 404|^HTTP 404 GET .*results\.report\?/.test(p))).toEqual([]);
  });
});
