import { describe, expect, it } from 'vitest';
import { diffObservations, directionOf, readingColumns, severityOf } from './results-reading';

const hgb = { code: 'HGB', analyte: 'Hemoglobin', value: '14.2', unit: 'g/dL', reference_interval: '13.0-17.7', abnormal_flag: null, result_status: 'final', loinc: 'not_modeled' };

describe('reading results', () => {
  it('puts analyte, value, unit, reference interval and flag first, then the other supplied keys, then loinc', () => {
    const columns = readingColumns([{ loinc: 'not_modeled', result_status: 'final', abnormal_flag: 'H', unit: 'g/dL', value: '1', analyte: 'A', code: 'A1', comment: 'x' }]);
    expect(columns.map((c) => c.header)).toEqual(['Analyte', 'Value', 'Unit', 'Flag', 'result_status', 'code', 'comment', 'loinc']);
    expect(readingColumns([{ name: 'Sodium', result: '139', units: 'mmol/L', reference_range: '134-144', flag: 'N' }]).map((c) => c.key)).toEqual([
      'name',
      'result',
      'units',
      'reference_range',
      'flag',
    ]);
  });

  it('marks critical flags (LL, HH, AA) apart from abnormal ones, and judges no value without a flag', () => {
    expect(severityOf({ abnormal_flag: 'LL' })).toBe('critical');
    expect(severityOf({ flag: 'hh' })).toBe('critical');
    expect(severityOf({ abnormal_flag: 'H' })).toBe('abnormal');
    expect(severityOf({ abnormal_flag: 'N' })).toBe('normal');
    expect(severityOf({ abnormal_flag: null, value: '999' })).toBe('normal');
    expect(severityOf({ abnormal_flags: ['N', 'A'] })).toBe('abnormal');
  });

  it('says what changed between versions, comparing values as supplied text', () => {
    const corrected = { ...hgb, value: '12.6', abnormal_flag: 'L', result_status: 'corrected', comment: 'Corrected result; previously reported as 14.2 g/dL.' };
    const wbc = { code: 'WBC', analyte: 'White Blood Cell Count', value: '6.4' };
    expect(diffObservations([hgb, wbc], [corrected, { ...wbc, value: '6.40' }])).toEqual([
      { kind: 'changed', label: 'HGB (Hemoglobin)', key: 'value', header: 'Value', before: '14.2', after: '12.6' },
      { kind: 'changed', label: 'HGB (Hemoglobin)', key: 'abnormal_flag', header: 'Flag', before: null, after: 'L' },
      { kind: 'changed', label: 'HGB (Hemoglobin)', key: 'result_status', header: 'result_status', before: 'final', after: 'corrected' },
      { kind: 'field_added', label: 'HGB (Hemoglobin)', key: 'comment', header: 'comment', after: 'Corrected result; previously reported as 14.2 g/dL.' },
      { kind: 'changed', label: 'WBC (White Blood Cell Count)', key: 'value', header: 'Value', before: '6.4', after: '6.40' },
    ]);
    expect(diffObservations([hgb], [hgb, wbc])).toEqual([{ kind: 'added', label: 'WBC (White Blood Cell Count)', observation: wbc }]);
    expect(diffObservations([hgb, wbc], [wbc])).toEqual([{ kind: 'removed', label: 'HGB (Hemoglobin)', observation: hgb }]);
  });
});

describe('directionOf', () => {
  it.each([
    [{ abnormal_flag: 'H' }, 'high'],
    [{ abnormal_flag: 'HH' }, 'high'],
    [{ flag: '>' }, 'high'],
    [{ abnormal_flag: 'L' }, 'low'],
    [{ abnormal_flag: 'LL' }, 'low'],
    [{ abnormal_flags: ['A', 'L'] }, 'low'],
    [{ abnormal_flag: 'A' }, null],
    [{ abnormal_flag: null }, null],
    [{ abnormal_flags: ['H', 'L'] }, null],
    [{}, null],
  ])('%j → %s', (observation, direction) => {
    expect(directionOf(observation)).toBe(direction);
  });
});
