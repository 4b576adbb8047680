import { LIFECYCLE_DETAILS } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { planScenario, SCENARIOS } from './scenarios';
import { resultRecordBody } from '../laboratory-operations/laboratory-operations.schemas';
import { numbersIn } from '../laboratory-operations/observation-text';
import { SYNTHETIC_RESULT_KINDS, syntheticObservations, syntheticPdf, syntheticResult } from './synthetic-results';

describe('scenario plans: derived from the steps through the transition table', () => {
  it('a step the transition table refuses makes the definition fail at load, naming the scenario and step', () => {
    expect(() =>
      planScenario({
        scenario: 'broken',
        description: 'ships before anything is collected',
        steps: [{ name: 'ship_too_early', description: '', operation: 'ship', args: {} }],
      }),
    ).toThrow(/scenario broken, step 1 \(ship_too_early\): cannot ship an order whose state is received/);
  });

  it('releasing with nothing recorded, or recording before testing, is refused at load', () => {
    expect(() => planScenario({ scenario: 'no_result', description: '', steps: [{ name: 'release', description: '', operation: 'release_result', args: { as: 'final' } }] })).toThrow(
      /no recorded result/,
    );
    expect(() => planScenario({ scenario: 'too_soon', description: '', steps: [{ name: 'record', description: '', operation: 'record_result', args: { content: 'final' } }] })).toThrow(
      /cannot be recorded while the order is received/,
    );
  });

  it('a change of lifecycle or next_action is announced by order.updated, or order.cancelled for a cancellation, after the step’s own events', () => {
    const cancelled = SCENARIOS.find((s) => s.scenario === 'cancelled_by_laboratory')!;
    // transmit and accept change only lifecycle_detail, which no event field shows: nothing is emitted.
    expect(cancelled.planned.map((p) => p.events)).toEqual([[], ['order.updated'], [], ['order.cancelled']]);
    const critical = SCENARIOS.find((s) => s.scenario === 'critical_result')!;
    expect(critical.planned.at(-2)!.events).toEqual([]);
    expect(critical.planned.at(-1)!.events).toEqual(['result.final', 'result.critical', 'order.updated']);
  });

  it('transmission_failure shows the recovery: the laboratory retransmits and the order is accepted; nothing asks the partner to act', () => {
    const failure = SCENARIOS.find((s) => s.scenario === 'transmission_failure')!;
    expect(failure.planned.map((p) => [p.step.name, p.from, p.to, p.events])).toEqual([
      ['transmit', 'received', 'transmitted', []],
      ['fail_transmission', 'transmitted', 'transmission_failed', []],
      ['retransmit', 'transmission_failed', 'transmitted', []],
      ['acknowledge', 'transmitted', 'accepted', ['order.updated']],
    ]);
  });

  it('no step is named after a lifecycle state it does not lead to (acknowledge leads to accepted; nothing named accept leads elsewhere)', () => {
    // The verb a past participle in a state's name reads as: accepted → accept, received → receive, transmitted → transmit.
    const verbsOf = (word: string) => (word.endsWith('ed') ? [word.slice(0, -2), word.slice(0, -1), word.slice(0, -2).replace(/([^aeiou])\1$/, '$1')] : []);
    const reads = (detail: string, name: string) => detail.split('_').some((word) => verbsOf(word).includes(name));
    for (const s of SCENARIOS) {
      for (const p of s.planned) {
        for (const detail of Object.keys(LIFECYCLE_DETAILS)) {
          if (reads(detail, p.step.name)) expect(reads(p.to, p.step.name), `${s.scenario}: step ${p.step.name} reads as ${detail} but leads to ${p.to}`).toBe(true);
        }
      }
    }
  });

  it('step names are unique within a scenario, so a step can be named in messages', () => {
    for (const s of SCENARIOS) expect(new Set(s.steps.map((step) => step.name)).size).toBe(s.steps.length);
  });
});

describe('synthetic results', () => {
  it('a partial CBC carries the first analytes only; a critical one flags hemoglobin LL', () => {
    expect(syntheticObservations('CBC', 'partial').map((o) => o.code)).toEqual(['WBC', 'RBC', 'HGB']);
    expect(syntheticObservations('CBC', 'critical').find((o) => o.code === 'HGB')).toMatchObject({ value: '6.1', abnormal_flag: 'LL' });
  });

  it('values are text, as the laboratory boundary requires: every panel and kind passes the record-result input unchanged', () => {
    for (const itemCode of ['CBC', 'LIPID', 'HBA1C', 'TSH', 'UA']) {
      for (const kind of SYNTHETIC_RESULT_KINDS) {
        const result = syntheticResult({ itemCode, itemName: itemCode, externalOrderId: 'ext-1', sequence: 1, orderId: '00000000-0000-4000-8000-000000000000' }, kind, true);
        expect(numbersIn(result.observations), `${itemCode} ${kind}`).toEqual([]);
        const parsed = resultRecordBody.safeParse(result);
        expect(parsed.error?.issues, `${itemCode} ${kind}`).toBeUndefined();
        expect(parsed.data?.observations).toEqual(result.observations);
      }
    }
    expect(syntheticObservations('CBC', 'final').find((o) => o.code === 'PLT')).toMatchObject({ value: '251' });
    expect(syntheticObservations('TSH', 'final')[0]).toMatchObject({ value: '2.310', reference_interval: '0.450-4.500' });
  });

  it('any other test falls back to a basic metabolic panel whose critical value is a potassium', () => {
    expect(syntheticObservations('UA', 'critical').find((o) => o.code === 'K')).toMatchObject({ analyte: 'Potassium', value: '6.9', unit: 'mmol/L', abnormal_flag: 'HH' });
  });

  it('the PDF report is well formed: every cross-reference offset points at its object', () => {
    const pdf = syntheticPdf('Title (with parentheses)', ['Line one', 'Ünïcode is replaced']).toString('latin1');
    const xrefAt = Number(/startxref\n(\d+)\n%%EOF\n$/.exec(pdf)![1]);
    expect(pdf.slice(xrefAt).startsWith('xref\n0 7\n')).toBe(true);
    const offsets = [...pdf.slice(xrefAt).matchAll(/^(\d{10}) 00000 n $/gm)].map((m) => Number(m[1]));
    expect(offsets).toHaveLength(6);
    offsets.forEach((offset, i) => expect(pdf.slice(offset).startsWith(`${i + 1} 0 obj\n`)).toBe(true));
    expect(pdf).toContain('(Title \\(with parentheses\\))');
    expect(pdf).toContain('(?n?code is replaced) Tj');
  });
});
