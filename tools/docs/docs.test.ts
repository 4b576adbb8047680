import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LIFECYCLE_DETAILS, RETRY_AFTER_MAX_SECONDS, SCOPES, SPEC_RETRY_DELAYS_SECONDS } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { decideNext, ERROR_CODES, EXCEPTION_CATEGORIES, exceptionCategorySchema, PROJECT_ROOT } from '@lop/domain';
import { DOC_FILES, fillBlocks, findScenarios, generatedBlocks } from './generate-docs';

const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');

describe('partner docs match the code', () => {
  const blocks = generatedBlocks();

  it.each(DOC_FILES)('%s: every generated block is what the code says now (npm run docs)', (file) => {
    const text = read(file);
    expect(fillBlocks(text, blocks), `${file} is out of date: run npm run docs`).toBe(text);
  });

  it('every generated block is used by some document', () => {
    const all = DOC_FILES.map(read).join('\n');
    for (const name of Object.keys(blocks)) expect(all, name).toContain(`<!-- generated:${name} `);
  });

  it('the scopes table names every scope the code enforces and every lifecycle state', () => {
    for (const scope of SCOPES) expect(read('docs/authentication.md')).toContain(`\`${scope}\``);
    for (const detail of Object.keys(LIFECYCLE_DETAILS)) expect(read('docs/lifecycle.md')).toContain(`| \`${detail}\` |`);
  });

  it('results-reports-exceptions.md states the exception policy table in code: one row per category, every attribute', () => {
    const text = read('docs/results-reports-exceptions.md');
    expect(text).toContain(`<!-- generated:exception-categories (npm run docs) -->\n${blocks['exception-categories']}\n<!-- /generated:exception-categories -->`);
    for (const category of exceptionCategorySchema.options) {
      const p = EXCEPTION_CATEGORIES[category];
      expect(text).toContain(`| \`${category}\` | ${p.severity} | ${p.owner_role} | ${p.entity_type} | ${p.retryable} | \`${p.partner_next_action}\` | ${p.opened_when} |`);
    }
  });

  it('errors.md names every error code', () => {
    for (const code of Object.keys(ERROR_CODES)) expect(read('docs/errors.md')).toContain(`\`${code}\``);
  });

  it('errors.md names every Content-Encoding the body reader decodes (hostile-input.test.ts sends each)', () => {
    const sentence = /a body that does not decode for its\s+`Content-Encoding` \(([^)]*)\)/.exec(read('docs/errors.md'))?.[1];
    expect(sentence?.match(/`[a-z]+`/g)?.map((e) => e.replace(/`/g, '')).sort()).toEqual(['br', 'deflate', 'gzip', 'zstd']);
  });

  it('webhooks.md states the Retry-After bound the retry policy applies: 60 minutes in all, never "beyond the schedule"', () => {
    const policy = { delaysSeconds: [...SPEC_RETRY_DELAYS_SECONDS], retryAfterMaxSeconds: RETRY_AFTER_MAX_SECONDS };
    const after = (attempt: number, retryAfter: string) => decideNext({ kind: 'response', status: 503, retryAfter }, attempt, policy, Date.now());
    // Attempt 1's step is 1 minute: a two-hour Retry-After waits 60 minutes, not 61.
    expect(after(1, '7200')).toMatchObject({ outcome: 'retry', delaySeconds: 3600 });
    // Attempt 4's step is 2 hours: a Retry-After never shortens it.
    expect(after(4, '60')).toMatchObject({ outcome: 'retry', delaySeconds: 7200 });
    const row = read('docs/webhooks.md')
      .split('\n')
      .find((line) => line.startsWith('| `Retry-After` |'));
    expect(row).toBeDefined();
    expect(row).not.toMatch(/beyond the schedule/);
    expect(row).toMatch(/at most 60 minutes/);
  });

  it('finds scenarios exported as an array or a record, and nothing else', () => {
    const events = ['order.updated'];
    expect(findScenarios({ SCENARIOS: [{ scenario: 'happy_path', steps: 2, events }] })).toEqual([{ scenario: 'happy_path', steps: 2, events }]);
    expect(findScenarios({ SCENARIOS: { happy_path: { steps: [1, 2], events } } })).toEqual([{ scenario: 'happy_path', steps: [1, 2], events }]);
    expect(findScenarios({ LIMITS: { region: 80 }, TYPES: ['a'] })).toBeNull();
  });
});
