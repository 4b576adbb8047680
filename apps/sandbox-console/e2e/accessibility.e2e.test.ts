import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { nav, openConsole, startStack, type Stack } from './harness';

/** Issue 24, item 8: a focus ring of at least 3:1 wherever it shows, and text that grows with the browser's font size. */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack('accessibility');
  await openConsole(stack);
});
afterAll(() => stack?.close());

/** WCAG contrast ratio of the focused element's outline against the background it sits on. */
function focusRingContrast(page: Page) {
  return page.evaluate(() => {
    const rgb = (css: string) => (css.match(/[\d.]+/g) ?? []).slice(0, 4).map(Number);
    const luminance = ([r, g, b]: number[]) => {
      const f = (c: number) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const element = document.activeElement as HTMLElement;
    const style = getComputedStyle(element);
    // The ring sits outside the element (outline-offset): its background is the nearest opaque one of an ancestor.
    let parent = element.parentElement;
    let background = [255, 255, 255];
    while (parent) {
      const b = rgb(getComputedStyle(parent).backgroundColor);
      if (b.length === 3 || b[3] > 0) {
        background = b.slice(0, 3);
        break;
      }
      parent = parent.parentElement;
    }
    const [hi, lo] = [luminance(rgb(style.outlineColor)), luminance(background)].sort((a, b) => b - a);
    return { ratio: (hi + 0.05) / (lo + 0.05), width: parseFloat(style.outlineWidth), style: style.outlineStyle, element: element.tagName + ' ' + (element.textContent ?? '').slice(0, 30) };
  });
}

describe('accessibility', () => {
  it('the focus ring has at least 3:1 contrast against what surrounds it, on each element a keyboard reaches first', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Fixtures' }).click();
    await page.getByRole('heading', { name: 'Fixtures', level: 1 }).waitFor();
    await page.locator('body').click({ position: { x: 1, y: 1 } });
    const seen: string[] = [];
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press('Tab');
      const ring = await focusRingContrast(page);
      seen.push(ring.element);
      expect(ring.style, ring.element).toBe('solid');
      expect(ring.width, ring.element).toBeGreaterThanOrEqual(2);
      expect(ring.ratio, `${ring.element}: ${ring.ratio.toFixed(2)}:1`).toBeGreaterThanOrEqual(3);
    }
    expect(new Set(seen).size).toBeGreaterThan(10);
  });

  it('body text follows the browser’s default font size (15 px at 16 px; larger when the reader sets it larger)', async () => {
    const { page } = stack;
    const size = () => page.evaluate(() => [getComputedStyle(document.body).fontSize, getComputedStyle(document.querySelector('p')!).fontSize].map(parseFloat));
    expect(await size()).toEqual([15, 15]);
    const cdp = await stack.browser.context.newCDPSession(page);
    await cdp.send('Page.setFontSizes', { fontSizes: { standard: 24 } });
    await expect.poll(size).toEqual([22.5, 22.5]);
    // Headings and small print scale with it.
    const h1 = await page.evaluate(() => parseFloat(getComputedStyle(document.querySelector('h1')!).fontSize));
    expect(h1).toBeCloseTo(1.6 * 22.5, 1);
    await cdp.send('Page.setFontSizes', { fontSizes: { standard: 16 } });
    await expect.poll(size).toEqual([15, 15]);
    await cdp.detach();
  });
});
