import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, LIFECYCLE_DETAILS, PROJECT_ROOT, SCOPES } from '@lop/domain';
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

  it('errors.md names every error code', () => {
    for (const code of Object.keys(ERROR_CODES)) expect(read('docs/errors.md')).toContain(`\`${code}\``);
  });

  it('finds scenarios exported as an array or a record, and nothing else', () => {
    const events = ['order.updated'];
    expect(findScenarios({ SCENARIOS: [{ scenario: 'happy_path', steps: 2, events }] })).toEqual([{ scenario: 'happy_path', steps: 2, events }]);
    expect(findScenarios({ SCENARIOS: { happy_path: { steps: [1, 2], events } } })).toEqual([{ scenario: 'happy_path', steps: [1, 2], events }]);
    expect(findScenarios({ LIMITS: { region: 80 }, TYPES: ['a'] })).toBeNull();
  });
});
