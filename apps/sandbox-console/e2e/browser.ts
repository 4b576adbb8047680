import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { findChromium } from './chromium';

// Flags known to work headless on this kind of machine; Playwright adds --headless and the profile folder.
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Every console error or warning and uncaught page error, as text. */
  problems: string[];
  close(): Promise<void>;
}

/** A fresh headless Chromium with its own throw-away profile, recording every browser-console problem. */
export async function openBrowser(viewport = { width: 1366, height: 768 }): Promise<Browser> {
  const { executablePath, env } = await findChromium();
  const profile = mkdtempSync(join(tmpdir(), 'console-e2e-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    env: { ...process.env, ...env },
    headless: true,
    args: FLAGS,
    viewport,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`console.${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  // The console line of a failed request has no URL: record which call failed.
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()} ${response.request().method()} ${decodeURIComponent(response.url())}`);
  });
  return {
    context,
    page,
    problems,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export const ARTIFACTS = join(import.meta.dirname, '../../../test-artifacts/console');

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  // From the top, so sticky panels sit where a reader first sees them.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}
