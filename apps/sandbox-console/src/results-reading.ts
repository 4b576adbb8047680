/**
 * Reading released observations the way a clinician-facing engineer scans a report: analyte,
 * value, unit, reference interval, flag, in that order; abnormal and critical rows marked; and
 * what changed from one version to the next. Observations have free keys (the laboratory decides
 * them), so each column is found by the names laboratories use for it. Values are never
 * reformatted: what is shown is the supplied text.
 */

export type Observation = Record<string, unknown>;

export interface ReadingColumn {
  /** Plain header, e.g. "Reference interval". */
  header: string;
  /** The supplied key this column shows. */
  key: string;
}

const ROLES: { header: string; keys: string[] }[] = [
  { header: 'Analyte', keys: ['analyte', 'name', 'test_name', 'display'] },
  { header: 'Value', keys: ['value', 'result', 'result_value'] },
  { header: 'Unit', keys: ['unit', 'units'] },
  { header: 'Reference interval', keys: ['reference_interval', 'reference_range', 'ref_range', 'range'] },
  { header: 'Flag', keys: ['abnormal_flag', 'flag', 'interpretation', 'abnormal_flags'] },
];

/** The identity of an observation across versions: its code when supplied, otherwise its analyte name. */
const IDENTITY_KEYS = ['code', 'analyte_code', 'observation_code', 'analyte', 'name'];

/** `loinc` is the API's own marker (`not_modeled`), not laboratory data: it reads last. */
const OWN_MARKERS = ['loinc'];

/**
 * Columns in reading order: the five roles (when any observation supplies them), then every
 * other supplied key in the order first seen, then the API's own markers.
 */
export function readingColumns(observations: Observation[]): ReadingColumn[] {
  const present = new Set(observations.flatMap((o) => Object.keys(o)));
  const columns: ReadingColumn[] = [];
  for (const role of ROLES) {
    const key = role.keys.find((k) => present.has(k));
    if (key) columns.push({ header: role.header, key });
  }
  const used = new Set(columns.map((c) => c.key));
  for (const o of observations) {
    for (const key of Object.keys(o)) {
      if (used.has(key) || OWN_MARKERS.includes(key)) continue;
      used.add(key);
      columns.push({ header: key, key });
    }
  }
  for (const key of OWN_MARKERS) if (present.has(key)) columns.push({ header: key, key });
  return columns;
}

export type Severity = 'normal' | 'abnormal' | 'critical';

/**
 * HL7 v2 abnormal flags (table 0078): LL/HH/AA (and `critical`/`panic` in words) are critical;
 * any other flag except N (normal) is abnormal. No flag is normal: values are never judged here.
 */
export function severityOf(observation: Observation): Severity {
  const flagKey = ROLES[4].keys.find((k) => k in observation);
  const raw = flagKey ? observation[flagKey] : null;
  const flags = (Array.isArray(raw) ? raw : [raw]).filter((f): f is string => typeof f === 'string' && f.trim() !== '').map((f) => f.trim().toUpperCase());
  if (flags.length === 0) return 'normal';
  if (flags.some((f) => ['LL', 'HH', 'AA', '<<', '>>', 'CRITICAL', 'PANIC', 'C'].includes(f))) return 'critical';
  if (flags.every((f) => f === 'N' || f === 'NORMAL')) return 'normal';
  return 'abnormal';
}

export type Direction = 'high' | 'low' | null;

/**
 * Which way an abnormal value lies, from the laboratory's own flag (HL7 table 0078: H/HH/> high,
 * L/LL/< low); null when the flag does not say (A, AA, words), so the view never guesses.
 */
export function directionOf(observation: Observation): Direction {
  const flagKey = ROLES[4].keys.find((k) => k in observation);
  const raw = flagKey ? observation[flagKey] : null;
  const flags = (Array.isArray(raw) ? raw : [raw]).filter((f): f is string => typeof f === 'string').map((f) => f.trim().toUpperCase());
  const high = flags.some((f) => ['H', 'HH', '>', '>>', 'HIGH'].includes(f));
  const low = flags.some((f) => ['L', 'LL', '<', '<<', 'LOW'].includes(f));
  return high === low ? null : high ? 'high' : 'low';
}

export function identityOf(observation: Observation, index: number): string {
  for (const key of IDENTITY_KEYS) {
    const value = observation[key];
    if (typeof value === 'string' && value !== '') return `${key}:${value}`;
  }
  return `#${index}`;
}

/** A name for an observation in a sentence: its analyte (and code), as supplied. */
export function labelOf(observation: Observation): string {
  const analyte = ['analyte', 'name', 'test_name', 'display'].map((k) => observation[k]).find((v) => typeof v === 'string');
  const code = ['code', 'analyte_code', 'observation_code'].map((k) => observation[k]).find((v) => typeof v === 'string');
  if (typeof analyte === 'string' && typeof code === 'string' && analyte !== code) return `${code} (${analyte})`;
  return String(code ?? analyte ?? 'observation');
}

export type Change =
  | { kind: 'added'; label: string; observation: Observation }
  | { kind: 'removed'; label: string; observation: Observation }
  | { kind: 'changed'; label: string; key: string; header: string; before: unknown; after: unknown }
  | { kind: 'field_added'; label: string; key: string; header: string; after: unknown }
  | { kind: 'field_removed'; label: string; key: string; header: string; before: unknown };

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * What changed from `before` to `after` (two released versions of one result), observation by
 * observation, field by field, in the order of `after`. Values compare as supplied text: "14.20"
 * and "14.2" differ, because the laboratory wrote them differently.
 */
export function diffObservations(before: Observation[], after: Observation[]): Change[] {
  const headerOf = new Map(readingColumns([...before, ...after]).map((c) => [c.key, c.header]));
  const earlier = new Map(before.map((o, i) => [identityOf(o, i), o]));
  const changes: Change[] = [];
  const seen = new Set<string>();
  after.forEach((o, i) => {
    const id = identityOf(o, i);
    seen.add(id);
    const label = labelOf(o);
    const previous = earlier.get(id);
    if (!previous) return void changes.push({ kind: 'added', label, observation: o });
    for (const key of new Set([...Object.keys(previous), ...Object.keys(o)])) {
      const header = headerOf.get(key) ?? key;
      if (!(key in previous)) changes.push({ kind: 'field_added', label, key, header, after: o[key] });
      else if (!(key in o)) changes.push({ kind: 'field_removed', label, key, header, before: previous[key] });
      else if (!same(previous[key], o[key])) changes.push({ kind: 'changed', label, key, header, before: previous[key], after: o[key] });
    }
  });
  before.forEach((o, i) => {
    if (!seen.has(identityOf(o, i))) changes.push({ kind: 'removed', label: labelOf(o), observation: o });
  });
  return changes;
}

/** A supplied value as text: strings exactly as they are; anything else as its JSON. */
export function suppliedText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
