import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { detailsFromZodIssues } from './zod-issues';

const schema = z.strictObject({
  external_order_id: z.string().min(1).max(190),
  program_id: z.uuid(),
  region: z.string().min(1).max(80).optional(),
  code: z.string().min(3).optional(),
  count: z.number().int().max(10).optional(),
  minimum: z.number().min(1).optional(),
  tags: z.array(z.string()).min(1).max(2).optional(),
  mode: z.enum(['a', 'b']).optional(),
  patient: z.strictObject({ email: z.email().optional(), legal_first_name: z.string().max(5).optional() }).optional(),
});

function details(input: unknown) {
  const parsed = schema.safeParse(input);
  if (parsed.success) throw new Error('expected a failure');
  return detailsFromZodIssues(parsed.error.issues);
}

const valid = { external_order_id: 'o-1', program_id: '5b1f1c3e-7d0a-4a61-9d7c-6a3b1f0e2c11' };

describe('detailsFromZodIssues: stable {field, issue} details', () => {
  it.each([
    ['a missing required field', { program_id: valid.program_id }, 'external_order_id', 'required'],
    ['an empty required string', { ...valid, external_order_id: '' }, 'external_order_id', 'required'],
    ['a string over its maximum', { ...valid, external_order_id: 'x'.repeat(191) }, 'external_order_id', 'too_long'],
    ['a string under its minimum (other than 1)', { ...valid, code: 'ab' }, 'code', 'too_short'],
    ['a malformed uuid', { ...valid, program_id: 'nope' }, 'program_id', 'invalid_format'],
    ['a wrong type', { ...valid, region: 42 }, 'region', 'invalid_type'],
    ['a number over its maximum', { ...valid, count: 11 }, 'count', 'too_large'],
    ['a number under its minimum', { ...valid, minimum: 0 }, 'minimum', 'too_small'],
    ['an array over its maximum', { ...valid, tags: ['a', 'b', 'c'] }, 'tags', 'too_many'],
    ['an array under its minimum', { ...valid, tags: [] }, 'tags', 'too_few'],
    ['a value outside an enum', { ...valid, mode: 'c' }, 'mode', 'invalid_value'],
    ['a nested field, dotted', { ...valid, patient: { legal_first_name: 'Augusta' } }, 'patient.legal_first_name', 'too_long'],
    ['a nested format error, dotted', { ...valid, patient: { email: 'not-an-email' } }, 'patient.email', 'invalid_format'],
  ])('%s', (_rule, input, field, issue) => {
    expect(details(input)).toEqual([expect.objectContaining({ field, issue })]);
  });

  it.each([
    ['a string over its maximum', { ...valid, external_order_id: 'x'.repeat(191) }, 'Must be at most 190 characters long.'],
    ['a missing field', { program_id: valid.program_id }, 'This field is required.'],
    ['an empty required string', { ...valid, external_order_id: '' }, 'This field is required and must not be empty.'],
    ['a string under its minimum', { ...valid, code: 'ab' }, 'Must be at least 3 characters long.'],
    ['a malformed uuid', { ...valid, program_id: 'nope' }, 'Must be a valid UUID.'],
    ['a wrong type', { ...valid, region: 42 }, 'Must be a string.'],
    ['a number over its maximum', { ...valid, count: 11 }, 'Must be at most 10.'],
    ['an array over its maximum', { ...valid, tags: ['a', 'b', 'c'] }, 'Must have at most 2 items.'],
    ['a value outside an enum', { ...valid, mode: 'c' }, 'Must be one of: a, b.'],
  ])('says it in the API\'s own words, never Zod\'s stock text: %s', (_rule, input, message) => {
    const [detail] = details(input);
    expect(detail.message).toBe(message);
    expect(detail.message).not.toMatch(/Too big|Too small|Invalid input|expected .* to have/);
  });

  it('each unknown field is its own detail, issue unknown_field', () => {
    expect(details({ ...valid, name: 'Ada', date_of_birth: '1815-12-10' })).toEqual([
      { field: 'name', issue: 'unknown_field', message: expect.any(String) },
      { field: 'date_of_birth', issue: 'unknown_field', message: expect.any(String) },
    ]);
  });

  it('an unknown nested field is dotted under its parent', () => {
    expect(details({ ...valid, patient: { ssn: '000-00-0000' } })).toEqual([expect.objectContaining({ field: 'patient.ssn', issue: 'unknown_field' })]);
  });

  it('several problems give several details, in order', () => {
    expect(details({ program_id: 'nope', region: 'r'.repeat(81) }).map((d) => [d.field, d.issue])).toEqual([
      ['external_order_id', 'required'],
      ['program_id', 'invalid_format'],
      ['region', 'too_long'],
    ]);
  });

  it('a failure of the whole value has no field', () => {
    const parsed = schema.safeParse('just text');
    expect(parsed.success).toBe(false);
    expect(detailsFromZodIssues(parsed.success ? [] : parsed.error.issues)).toEqual([expect.objectContaining({ field: undefined, issue: 'invalid_type' })]);
  });

  it('details never echo the rejected value', () => {
    const text = JSON.stringify(details({ ...valid, external_order_id: 'SECRET-'.repeat(40), patient: { legal_first_name: 'Augusta' } }));
    expect(text).not.toContain('SECRET-');
    expect(text).not.toContain('Augusta');
  });
});
