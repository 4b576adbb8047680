import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { freeTextSchema, hasRefusedCharacter, textSchema, timestampSchema } from './common-schemas';
import { detailsFromZodIssues } from './http/zod-issues';
import { recordResultInput } from './laboratory-operations/laboratory-operations.schemas';
import { partnerRouter } from './routers';
import { laboratoryRouter } from './routers-internal/laboratory';

const issuesOf = (schema: z.ZodType, value: unknown) => {
  const parsed = schema.safeParse(value);
  return parsed.success ? [] : detailsFromZodIssues(parsed.error.issues).map((d) => d.issue);
};

const C0 = Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i));

describe('textSchema: identifiers and one-line values', () => {
  it.each([
    ['NUL', 'a\u0000b'],
    ['DEL', 'a\u007fb'],
    ['escape (ANSI sequences)', '\u001b[31mred'],
    ['a lone high surrogate', 'a\ud800b'],
    ['a lone low surrogate', 'a\udc00b'],
    ['a reversed pair', 'a\udc00\ud800b'],
    ['a high surrogate at the end', 'ab\ud83d'],
  ])('refuses %s with invalid_characters', (_label, value) => {
    expect(issuesOf(textSchema(190), value)).toEqual(['invalid_characters']);
  });

  it('refuses every C0 control character, tab and line breaks included', () => {
    for (const control of C0) expect(issuesOf(textSchema(190), `a${control}b`), JSON.stringify(control)).toEqual(['invalid_characters']);
  });

  it.each([
    ['ASCII', 'ord-2024-0001'],
    ['letters beyond ASCII', 'Zoë Ångström 山田'],
    ['a surrogate pair (emoji)', 'kit-😀'],
    ['right-to-left text', 'طلب-٣'],
    ['spaces', 'a b'],
  ])('accepts %s exactly as sent', (_label, value) => {
    expect(textSchema(190).parse(value)).toBe(value);
  });

  it('keeps its length rules, and reports both when both are broken', () => {
    expect(issuesOf(textSchema(3), '')).toEqual(['required']);
    expect(issuesOf(textSchema(3), 'a\u0000bcd')).toEqual(['too_long', 'invalid_characters']);
  });
});

describe('freeTextSchema: notes and answers', () => {
  it('keeps tab, line feed and carriage return', () => {
    expect(freeTextSchema(100).parse('line one\r\nline\ttwo\n')).toBe('line one\r\nline\ttwo\n');
  });

  it('refuses every other C0 control character, DEL and lone surrogates', () => {
    for (const control of C0.filter((c) => !'\t\n\r'.includes(c))) {
      expect(issuesOf(freeTextSchema(100), `a${control}b`), JSON.stringify(control)).toEqual(['invalid_characters']);
    }
    expect(issuesOf(freeTextSchema(100), 'a\u007f')).toEqual(['invalid_characters']);
    expect(issuesOf(freeTextSchema(100), 'a\ud800')).toEqual(['invalid_characters']);
  });
});

describe('timestampSchema: an instant PostgreSQL can store', () => {
  it.each([
    ['year 0', '0000-01-01T00:00:00Z'],
    ['an offset that carries 9999 into 10000', '9999-12-31T23:59:59-23:59'],
    ['an offset that carries 0001 back into year 0', '0001-01-01T00:00:00+00:01'],
  ])('refuses %s with out_of_range', (_label, value) => {
    expect(issuesOf(timestampSchema, value)).toEqual(['out_of_range']);
  });

  it.each([
    ['the first instant of year 1', '0001-01-01T00:00:00Z'],
    ['year 1 with a negative offset', '0001-01-01T00:00:00-01:00'],
    ['the last second of 9999', '9999-12-31T23:59:59Z'],
    ['9999 with an offset that stays in 9999', '9999-12-31T00:00:00-23:59'],
    ['fractions beyond milliseconds', '2025-03-05T08:15:00.123456789+01:00'],
  ])('accepts %s', (_label, value) => {
    expect(timestampSchema.parse(value)).toBe(value);
  });

  it('a malformed value is invalid_format only (no range to judge)', () => {
    expect(issuesOf(timestampSchema, 'yesterday')).toEqual(['invalid_format']);
    expect(issuesOf(timestampSchema, '2025-03-05T08:15:00')).toEqual(['invalid_format']);
  });
});

describe('observations (jsonb): what PostgreSQL cannot hold is refused', () => {
  it('record-result refuses them with invalid_characters naming the field', () => {
    const input = {
      order_id: '5b1f1c3e-7d0a-4a61-9d7c-6a3b1f0e2c11',
      source_result_id: 'r-1',
      performing_laboratory_system: 'LIS',
      observations: [{ analyte: 'Glucose', value: '98\u0000' }],
    };
    const parsed = recordResultInput.safeParse(input);
    expect(parsed.success).toBe(false);
    expect(detailsFromZodIssues(parsed.error!.issues)).toMatchObject([{ field: 'observations.0.value', issue: 'invalid_characters' }]);
  });
});

/**
 * The class, not the instances: every string any procedure takes, on the partner router and the
 * laboratory operators' router, refuses NUL and a lone surrogate at its own path. A new string
 * field without the character rule fails here.
 */
type Def = { type: string; shape?: Record<string, z.ZodType>; innerType?: z.ZodType; element?: z.ZodType; keyType?: z.ZodType; valueType?: z.ZodType; in?: z.ZodType };
const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Each string leaf of an input schema, as the path to it and a function that builds an input holding `value` there. */
function stringLeaves(schema: z.ZodType, path: (string | number)[] = [], wrap: (v: unknown) => unknown = (v) => v): { path: string; build: (v: string) => unknown }[] {
  const def = defOf(schema);
  switch (def.type) {
    case 'string':
      return [{ path: path.join('.'), build: (v) => wrap(v) }];
    case 'object':
      return Object.entries(def.shape!).flatMap(([key, child]) => stringLeaves(child, [...path, key], (v) => wrap({ [key]: v })));
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
      return stringLeaves(def.innerType!, path, wrap);
    case 'array':
      return stringLeaves(def.element!, [...path, 0], (v) => wrap([v]));
    case 'pipe':
      return stringLeaves(def.in!, path, wrap);
    case 'record':
      return [
        ...stringLeaves(def.keyType!, path, (v) => wrap({ [String(v)]: 'x' })).map((leaf) => ({ ...leaf, path: `${leaf.path}.<key>` })),
        ...stringLeaves(def.valueType!, [...path, 'k'], (v) => wrap({ k: v })),
      ];
    default:
      return [];
  }
}

function procedureInputs(router: { _def: { procedures: Record<string, unknown> } }) {
  return Object.entries(router._def.procedures).map(([name, procedure]) => {
    const inputs = (procedure as { _def: { inputs: z.ZodType[] } })._def.inputs;
    return { name, input: inputs[0] };
  });
}

describe('every string a procedure takes refuses what PostgreSQL would refuse or change', () => {
  const procedures = [...procedureInputs(partnerRouter), ...procedureInputs(laboratoryRouter as never)];

  it('finds the inputs it walks (the walk itself works)', () => {
    const leaves = procedures.flatMap(({ name, input }) => stringLeaves(input).map((leaf) => `${name}:${leaf.path}`));
    expect(leaves).toEqual(expect.arrayContaining(['orders.create:external_order_id', 'orders.create:patient.legal_first_name', 'orders.create:aoe_answers.0.answer', 'subjects.put:externalSubjectId', 'programs.requirements:region', 'events.list:cursor', 'recordResult:observations.0.<key>', 'collect:specimen_code']));
  });

  for (const [label, value] of [
    ['NUL', 'ok\u0000'],
    ['a lone surrogate', 'ok\ud800'],
  ] as const) {
    it(`refuses ${label} in every string field`, () => {
      const accepted: string[] = [];
      for (const { name, input } of procedures) {
        for (const leaf of stringLeaves(input)) {
          const parsed = input.safeParse(leaf.build(value));
          const issues = parsed.success ? [] : parsed.error.issues;
          if (!issues.some((issue) => issue.path.join('.') === leaf.path.replace('.<key>', '') || issue.path.join('.').startsWith(`${leaf.path.replace('.<key>', '')}.`))) accepted.push(`${name}:${leaf.path}`);
        }
      }
      expect(accepted).toEqual([]);
    });
  }
});

describe('hasRefusedCharacter (shared with the admin CLI)', () => {
  it('applies the one-line rule by default and the free-text rule when asked', () => {
    expect(hasRefusedCharacter('Acme\tHealth')).toBe(true);
    expect(hasRefusedCharacter('Acme\tHealth', { multiline: true })).toBe(false);
    expect(hasRefusedCharacter('Acme Health')).toBe(false);
  });
});
