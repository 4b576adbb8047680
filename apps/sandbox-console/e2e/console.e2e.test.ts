import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { EVENT_TYPES, PARTNER_BASE_PATH, SCOPES } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase, type DatabaseConnection } from '@lop/db';
import { startDeliveryWorker, type RunningDeliveryWorker } from '@lop/delivery-worker';
import { createKey, createSubscription, loadConfig, protectorFor, seedDemo, webhookSettings } from '@lop/domain';
import { createLogger, startPartnerApi, type RunningApi } from '@lop/partner-api';
import { ensureConsoleBuilt } from '../ensure-built';
import { ARTIFACTS, openBrowser, screenshot, type Browser } from './browser';
import { startReceiver, type Receiver } from './receiver';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

interface ScenarioStep {
  step: number;
  name: string;
  events: string[];
}

let database: DatabaseConnection;
let api: RunningApi;
let worker: RunningDeliveryWorker;
let receiver: Receiver;
let browser: Browser;
let sandboxKey: string;
let productionKey: string;

beforeAll(async () => {
  const { dir } = await ensureConsoleBuilt();
  const databaseUrl = inject('databaseUrl');
  database = connectDatabase(databaseUrl, { max: 2, applicationName: 'console-e2e' });
  const demo = await seedDemo(database.db);
  sandboxKey = demo.sandbox_key;
  productionKey = (await createKey(database.db, { clientId: demo.client_id, environment: 'production', scopes: [...SCOPES] })).key;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    PARTNER_DB_POOL_SIZE: '4',
    PARTNER_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    // A loopback receiver, and retries after a second instead of minutes.
    PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
    PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1,1,1',
    PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS: '0.5',
  });
  receiver = await startReceiver();
  await createSubscription(
    database.db,
    protectorFor(config),
    { clientId: demo.client_id, environment: 'sandbox', url: receiver.url, eventTypes: [...EVENT_TYPES] },
    webhookSettings(config).destination,
  );
  const logger = createLogger(config, 'console-e2e');
  api = await startPartnerApi({ config, databaseUrl, logger, consoleDir: dir });
  worker = await startDeliveryWorker(databaseUrl, { config, logger });
  browser = await openBrowser();
});

afterAll(async () => {
  await browser?.close();
  await api?.close();
  await worker?.close();
  await receiver?.close();
  await database?.close();
});

/** The scenario as the API describes it, read over REST like a partner would. */
async function scenarioSteps(name: string): Promise<ScenarioStep[]> {
  const response = await fetch(`${api.url}${PARTNER_BASE_PATH}/v1/sandbox/scenarios`, { headers: { authorization: `Bearer ${sandboxKey}` } });
  const body = (await response.json()) as { data: { scenario: string; step_details: ScenarioStep[] }[] };
  const scenario = body.data.find((s) => s.scenario === name);
  if (!scenario) throw new Error(`no scenario ${name}`);
  return scenario.step_details;
}

const nav = () => browser.page.getByRole('navigation', { name: 'Console' });

describe('the sandbox console in a browser', () => {
  it('refuses a production key with a clear message and keeps nothing', async () => {
    const { page } = browser;
    await page.goto(`${api.url}/console/`);
    await page.getByRole('heading', { name: 'Sandbox console' }).waitFor();
    await screenshot(page, '01-key');

    // Keyboard only: the key field has focus on arrival, Enter submits.
    await page.keyboard.type(productionKey);
    await page.keyboard.press('Enter');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('This is a production key');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await screenshot(page, '02-production-key-refused');
    // The console door's 403 for the production key is the one failure this test expects the browser to log.
    expect(browser.problems.splice(0)).toEqual([expect.stringMatching(/^HTTP 403 GET .*\/api\/trpc\/health\.get/), expect.stringMatching(/status of 403/)]);
  });

  it('opens with a sandbox key and shows the laboratory, environment and granted programs', async () => {
    const { page } = browser;
    await page.getByLabel('Sandbox API key').fill(sandboxKey);
    await page.getByRole('button', { name: 'Open the console' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByRole('cell', { name: 'Everyday Wellness (Sandbox)' }).waitFor();
    await page.getByText('Northwind Clinical Laboratories').first().waitFor();
    const text = await page.locator('main').textContent();
    expect(text).toContain('sandbox');
    expect(text).not.toContain('Everyday WellnessActive'); // production programs are not granted to a sandbox key
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([expect.stringMatching(/^lop_test_/)]);
    await screenshot(page, '03-overview');
  });

  it('creates an order from a fixture in one click, then walks corrected_result step by step while the timeline and lineage follow', async () => {
    const { page } = browser;
    await nav().getByRole('link', { name: 'Fixtures' }).click();
    await page.getByRole('heading', { name: 'Fixtures' }).waitFor();
    const minimal = page.locator('article', { has: page.getByRole('heading', { name: 'minimal' }) });
    await minimal.getByRole('button', { name: 'Create order' }).waitFor();
    await screenshot(page, '04-fixtures');

    await minimal.getByRole('button', { name: 'Create order' }).click();
    await page.getByText(/created from the minimal fixture/).waitFor();
    const externalOrderId = await page.getByRole('heading', { level: 1 }).textContent();
    expect(externalOrderId).toMatch(/^console-minimal-/);
    const timeline = page.locator('aside.order-events .timeline-item');
    await expect.poll(() => timeline.count(), { timeout: 15_000 }).toBe(1);
    expect(await timeline.first().getAttribute('data-type')).toBe('order.created');
    await screenshot(page, '05-order-created');

    await page.getByLabel('Scenario', { exact: true }).selectOption('corrected_result');
    const steps = await scenarioSteps('corrected_result');
    let expectedEvents = ['order.created'];
    for (const step of steps) {
      await page.getByRole('button', { name: step.step === 1 ? 'Run first step' : 'Run next step' }).click();
      await page.getByText(`${step.step} of ${steps.length} steps done`).waitFor();
      expectedEvents = [...expectedEvents, ...step.events];
      // Each event appears on the timeline as it lands (newest first), read by polling the stream with its cursor.
      await expect
        .poll(() => timeline.evaluateAll((items) => items.map((i) => i.getAttribute('data-type')).reverse()), { timeout: 15_000 })
        .toEqual(expectedEvents);
      if (step.name === 'release_final_result') await screenshot(page, '06-order-final-released');
    }
    expect(expectedEvents).toEqual(expect.arrayContaining(['result.final', 'result.corrected']));

    // Lineage: v1 final superseded by v2 corrected, which is current; observations exactly as supplied.
    const lineage = page.getByRole('list', { name: 'Result versions, oldest first' });
    await expect.poll(() => lineage.locator('li').count(), { timeout: 15_000 }).toBe(2);
    const [first, second] = await lineage.locator('li').allTextContents();
    expect(first).toMatch(/v1.*final.*superseded/);
    expect(second).toMatch(/v2.*corrected.*current/);
    await page.getByText('superseded by v2').waitFor();
    const version1 = page.getByRole('article', { name: 'Result version 1' });
    expect(await version1.locator('table.observations').count()).toBe(1);
    await page.getByText('Every step of this scenario has run on this order.').waitFor();
    expect(await page.locator('h1').textContent()).toBe(externalOrderId);
    await page.getByText('completed').first().waitFor();
    await screenshot(page, '07-order-corrected');
    await page.getByRole('article', { name: 'Results', exact: true }).screenshot({ path: join(ARTIFACTS, '07b-results-lineage.png') });

    // JSON of an event on click (a real button, keyboard reachable).
    const corrected = page.locator('aside.order-events .timeline-item[data-type="result.corrected"]');
    await corrected.getByRole('button').focus();
    await page.keyboard.press('Enter');
    const json = JSON.parse((await corrected.locator('pre.json').textContent())!) as { type: string; data: { external_order_id: string } };
    expect(json).toMatchObject({ type: 'result.corrected', data: { external_order_id: externalOrderId } });
    await corrected.screenshot({ path: join(ARTIFACTS, '08-event-json.png') });
  });

  it('lists the order with its lifecycle and next action, and the whole event stream', async () => {
    const { page } = browser;
    await nav().getByRole('link', { name: 'Orders' }).click();
    await page.getByRole('heading', { name: 'Orders' }).waitFor();
    const row = page.getByRole('row', { name: /console-minimal-/ });
    await row.waitFor();
    expect(await row.textContent()).toMatch(/completed.*corrected results.*read results/);
    await screenshot(page, '09-orders');

    await nav().getByRole('link', { name: 'Events' }).click();
    await page.getByRole('heading', { name: 'Events' }).waitFor();
    await page.locator('.timeline-item[data-type="result.corrected"]').waitFor();
    await screenshot(page, '10-events');

    // Deliveries of each event to the subscription: a success, a retry, a dead letter.
    const delivered = page.locator('.timeline-item[data-type="order.created"]');
    await delivered.getByText('webhook delivered · 200').waitFor({ timeout: 20_000 });
    const final = page.locator('.timeline-item[data-type="result.final"]');
    await final.getByText('webhook delivered · 200 · 2 attempts').waitFor({ timeout: 20_000 });
    await final.getByRole('button').click();
    const attempts = final.locator('.delivery table tbody tr');
    expect(await attempts.allTextContents()).toEqual([expect.stringMatching(/^1.*503.*retry/), expect.stringMatching(/^2.*200.*delivered/)]);
    const dead = page.locator('.timeline-item[data-type="specimen.updated"]').first();
    await dead.getByText('webhook dead lettered · 410').waitFor({ timeout: 20_000 });
    await dead.getByRole('button').click();
    await dead.getByText(/Dead letter/).waitFor();
    await screenshot(page, '11-events-webhook-deliveries');
  });

  it('logged no error or warning in the browser console', () => {
    expect(browser.problems).toEqual([]);
  });
});
