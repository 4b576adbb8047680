import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/** axe-core's browser build, read once: evaluated in the page over the DevTools protocol, which the pages' CSP does not govern. */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[]; failureSummary?: string }[];
}

/**
 * Rules held at any impact, for faults issue 35 found that axe rates below serious: a heading that
 * skips a level, a table header cell with no text.
 */
const ALWAYS = new Set(['heading-order', 'empty-table-header']);

/** axe's violations in the page as it is now: in `include`'s elements (selectors) or the whole document. */
async function runAxe(page: Page, include?: string[]): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async (selectors) => {
    const axe = (window as unknown as { axe: { run(context: unknown, options: object): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run(selectors ? { include: selectors.map((s) => [s]) } : document, { resultTypes: ['violations'] })).violations;
  }, include);
}

const describeViolation = (v: AxeViolation) =>
  `${v.id} (${v.impact}, ${v.nodes.length}×): ${v.help} — ${v.nodes.slice(0, 3).map((n) => `${n.target.join(' ')}: ${n.failureSummary?.replace(/\s+/g, ' ')}`).join(' | ')}`;

/**
 * The serious and critical axe violations on the page as it is now (and any of ALWAYS), one line
 * each with the first elements concerned (empty when there is none). The rules axe runs by
 * default: WCAG 2.x A and AA plus its best practices (landmarks, heading order, scrollable regions).
 */
export async function seriousAxeViolations(page: Page): Promise<string[]> {
  return (await runAxe(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical' || ALWAYS.has(v.id)).map(describeViolation);
}

/** Every axe violation, whatever its impact, inside the elements `selectors` name: for a view a test holds to the full rule set. */
export async function axeViolationsIn(page: Page, selectors: string[]): Promise<string[]> {
  return (await runAxe(page, selectors)).map(describeViolation);
}

/**
 * How far the page is wider than the window, in CSS pixels (0 or less: nothing scrolls sideways),
 * and the outermost elements that reach past its right edge, to say what to fix.
 */
export const pageOverflow = (page: Page) =>
  page.evaluate(() => {
    const overflow = document.documentElement.scrollWidth - window.innerWidth;
    const right = (e: Element) => e.getBoundingClientRect().right + window.scrollX;
    const past = (e: Element) => right(e) > window.innerWidth + 0.5;
    // Content that a scrolling (or clipping) ancestor holds in does not widen the page.
    const clipped = (e: Element) => {
      for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) if (getComputedStyle(a).overflowX !== 'visible') return true;
      return false;
    };
    const culprits =
      overflow <= 0
        ? []
        : [...document.body.querySelectorAll('*')]
            .filter((e) => past(e) && !clipped(e) && !(e.parentElement && past(e.parentElement) && !clipped(e.parentElement)))
            .slice(0, 5)
            .map((e) => `${e.tagName.toLowerCase()}${e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : ''} (to ${Math.round(right(e))} px)`);
    return { overflow, culprits };
  });
