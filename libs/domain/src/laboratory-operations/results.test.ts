import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { resultVersions } from '@lop/db';
import { recordResultInput } from './laboratory-operations.schemas';
import { recordResult } from './result-recording';
import { flagCritical, releaseResult } from './result-release';
import { driveTo, newOrder, openTestDatabase, resultBody, snapshot } from '../../testing/orders';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

/** The refusal text for a record-result input, or '' when it is valid. */
function recordInputError(body: Record<string, unknown>): string {
  const parsed = recordResultInput.safeParse({ ...body, order_id: '00000000-0000-4000-8000-000000000000' });
  return parsed.success ? '' : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
}

describe('recording and releasing result versions', () => {
  it('a recorded version is stored exactly as supplied, unreleased and without a version number', async () => {
    const { order, performingLaboratory } = await newOrder(db);
    await driveTo(db, order.id, 'in_testing');
    const observations = [
      { analyte: 'Glucose', value: '098', unit: 'mg/dL', reference_interval: '70-99' },
      { analyte: 'Culture', value: 'No growth at 48 hours', nested: { flags: ['N', null], reviewed: true, numeric: '1.50' } },
      { analyte: 'Potassium', value: '4.10', unit: 'mmol/L', big: '12345678901234567890' },
    ];
    const outcome = await recordResult(db, { ...resultBody({ observations, report: { content_type: 'application/pdf', content_base64: 'JVBERi0xLjQK' } }), order_id: order.id });
    expect(outcome.events).toEqual([]);
    expect(outcome.order.lifecycle_detail).toBe('in_testing');
    expect(outcome.result).toMatchObject({ status: 'recorded', version: null, version_type: null, state: null, released_at: null, observation_count: 3, performing_laboratory: performingLaboratory, report_content_type: 'application/pdf' });
    const [row] = await db.select().from(resultVersions).where(eq(resultVersions.id, outcome.result.result_id));
    // Text stays text ("098" is not 98, "4.10" is not 4.1), nothing is converted or added.
    expect(row.observations).toEqual(observations);
    const [{ text }] = await connection.sql<{ text: string }[]>`select observations::text as text from result_versions where id = ${outcome.result.result_id}`;
    expect(text).toContain('"4.10"');
    expect(text).toContain('"12345678901234567890"');
    expect(row.reportDocument).toBe('JVBERi0xLjQK');
  });

  it('releases number the lineage 1, 2, 3… and each supersedes the previous released version', async () => {
    const { order } = await newOrder(db);
    await driveTo(db, order.id, 'in_testing');
    const release = async (as: 'partial' | 'final' | 'corrected' | 'amended') => {
      const recorded = await recordResult(db, { ...resultBody(), order_id: order.id });
      return releaseResult(db, { result_id: recorded.result.result_id, as });
    };
    const partial = await release('partial');
    expect(partial.order).toMatchObject({ lifecycle: 'resulted', lifecycle_detail: 'partial_results', next_action: 'read_results' });
    const final = await release('final');
    expect(final.order).toMatchObject({ lifecycle: 'completed', lifecycle_detail: 'final_results' });
    const corrected = await release('corrected');
    expect(corrected.order).toMatchObject({ lifecycle: 'completed', lifecycle_detail: 'corrected_results' });
    const amended = await release('amended');
    expect(amended.order.lifecycle_detail).toBe('corrected_results');

    expect([partial, final, corrected, amended].map((o) => [o.result.version, o.result.version_type, o.result.state, o.result.supersedes_result_id])).toEqual([
      [1, 'initial', 'partial', null],
      [2, 'update', 'final', partial.result.result_id],
      [3, 'correction', 'corrected', final.result.result_id],
      [4, 'amendment', 'amended', corrected.result.result_id],
    ]);
  });

  it('a version cannot be released twice', async () => {
    const { order } = await newOrder(db);
    await driveTo(db, order.id, 'in_testing');
    const recorded = await recordResult(db, { ...resultBody(), order_id: order.id });
    await releaseResult(db, { result_id: recorded.result.result_id, as: 'partial' });
    const before = await snapshot(db, order.id);
    await expect(releaseResult(db, { result_id: recorded.result.result_id, as: 'final' })).rejects.toMatchObject({ kind: 'conflict', message: expect.stringMatching(/already released as version 1/) });
    expect(await snapshot(db, order.id)).toEqual(before);
  });

  it('a correction before any final release is refused by the transition table', async () => {
    const { order } = await newOrder(db);
    await driveTo(db, order.id, 'partial_results');
    const recorded = await recordResult(db, { ...resultBody(), order_id: order.id });
    const before = await snapshot(db, order.id);
    await expect(releaseResult(db, { result_id: recorded.result.result_id, as: 'corrected' })).rejects.toThrow(
      'cannot release correction an order whose state is partial_results',
    );
    expect(await snapshot(db, order.id)).toEqual(before);
  });

  it('critical: released with --critical, recorded critical, or flagged later', async () => {
    const { order } = await newOrder(db);
    await driveTo(db, order.id, 'in_testing');
    const a = await recordResult(db, { ...resultBody(), order_id: order.id });
    const released = await releaseResult(db, { result_id: a.result.result_id, as: 'partial', critical: true });
    expect(released.result.is_critical).toBe(true);
    const b = await recordResult(db, { ...resultBody(), order_id: order.id });
    const flagged = await flagCritical(db, { result_id: b.result.result_id });
    expect(flagged.result).toMatchObject({ is_critical: true, status: 'recorded' });
    expect((await releaseResult(db, { result_id: b.result.result_id, as: 'final' })).result.is_critical).toBe(true);
  });

  it('unknown result ids are not_found', async () => {
    const missing = '00000000-0000-4000-8000-000000000001';
    await expect(releaseResult(db, { result_id: missing, as: 'final' })).rejects.toMatchObject({ kind: 'not_found' });
    await expect(flagCritical(db, { result_id: missing })).rejects.toMatchObject({ kind: 'not_found' });
  });

  it.each([
    ['a LOINC code on an observation', { observations: [{ analyte: 'Glucose', value: '98', loinc: '2345-7' }] }, 'LOINC codes are not modeled'],
    ['no observations', { observations: [] }, 'observations'],
    ['an empty observation', { observations: [{}] }, 'at least one field'],
    ['a report that is not base64', { report: { content_type: 'application/pdf', content_base64: 'not base64!' } }, 'report.content_base64'],
    ['a report without a media type', { report: { content_type: 'pdf', content_base64: 'JVBERi0xLjQK' } }, 'report.content_type'],
    ['an unknown field', { patient_name: 'Jane' }, 'patient_name'],
    ['a value sent as a JSON number', { observations: [{ analyte: 'Glucose', value: '98' }, { analyte: 'Potassium', value: 1.5 }] }, 'observations.1.value: must be a string, not the JSON number 1.5: send the value as the laboratory system printed it, e.g. "1.50"'],
    ['a number deep inside an observation', { observations: [{ analyte: 'K', value: '4.1', reference_interval: { low: 3.5, high: '5.1' }, replicates: ['4.1', 4.2] }] }, 'observations.0.reference_interval.low: must be a string'],
    ['a number among the replicates', { observations: [{ analyte: 'K', value: '4.1', replicates: ['4.1', 4.2] }] }, 'observations.0.replicates.1: must be a string, not the JSON number 4.2'],
    // What FHIR R4's string cannot carry (the result's FHIR view), refused where it enters.
    ['a vertical tab in a value', { observations: [{ analyte: 'K', value: '4.1\u000b' }] }, 'observations.0.value: must not hold control characters other than tab and line breaks'],
    ['a form feed in a comment', { observations: [{ analyte: 'K', value: '4.1', comment: 'a\u000cb' }] }, 'observations.0.comment: must not hold control characters'],
    ['an escape character in a name', { observations: [{ analyte: 'K\u001b[0m', value: '4.1' }] }, 'observations.0.analyte: must not hold control characters'],
    ['a control character nested in an object', { observations: [{ analyte: 'K', instrument: { lane: ['B\u0002'] } }] }, 'observations.0.instrument.lane.0: must not hold control characters'],
    ['a control character in a key', { observations: [{ analyte: 'K', 'unit\u0001': 'mmol/L' }] }, 'observations.0.unit\u0001: the field name must not hold control characters'],
    ['a whitespace-only value', { observations: [{ analyte: 'K', value: '   ' }] }, 'observations.0.value: must have a character that is not whitespace'],
    ['a whitespace-only key', { observations: [{ analyte: 'K', ' ': 'x' }] }, 'observations.0. : a field name must have a character that is not whitespace'],
    ['a value over 1 MB', { observations: [{ analyte: 'K', comment: 'é'.repeat(512 * 1024 + 1) }] }, 'observations.0.comment: is over 1 MB'],
    ['a nested value over 1 MB as JSON text', { observations: [{ analyte: 'K', raw: { text: 'x'.repeat(1024 * 1024) } }] }, 'observations.0.raw: is over 1 MB'],
  ])('the result input refuses %s', (_rule, overrides, message) => {
    expect(recordInputError({ ...resultBody(), ...overrides })).toContain(message);
  });

  it('the result input keeps tab and line breaks, an empty string and a value of exactly 1 MB', () => {
    expect(recordInputError({ ...resultBody(), observations: [{ analyte: 'K', value: '4.1', comment: 'a\tb\r\nc', unit: '', note: 'x'.repeat(1024 * 1024) }] })).toBe('');
  });

  it('an in-process caller that skips the input schema still cannot store a number: refused as invalid, nothing stored', async () => {
    const { order } = await newOrder(db);
    await driveTo(db, order.id, 'in_testing');
    const before = await snapshot(db, order.id);
    const observations = [{ analyte: 'Potassium', value: 1.5 as unknown as string }];
    await expect(recordResult(db, { ...resultBody({ observations }), order_id: order.id })).rejects.toMatchObject({
      kind: 'invalid',
      message: 'observations[0].value: must be a string, not the JSON number 1.5: send the value as the laboratory system printed it, e.g. "1.50" (a JSON number loses how it was written: 1.50 arrives as 1.5)',
    });
    expect(await snapshot(db, order.id)).toEqual(before);
  });
});
