/**
 * Spec rule 6 at the laboratory boundary: observation values, units, reference intervals and flags
 * are returned exactly as the laboratory supplied them, so they are taken as text. A JSON number
 * cannot be kept that way: it is rewritten by the first JSON parser it meets, before any code of
 * ours sees it (1.50 arrives as 1.5, 12345678901234567890 as 12345678901234567000). So a number
 * anywhere in an observation is refused with the place it was found, never stored. Strings,
 * booleans and null survive parsing unchanged and are accepted.
 */

import { hasRefusedCharacter } from '../common-schemas';

export type InputPath = readonly PropertyKey[];

export interface ObservationNumber {
  /** Relative to the value searched, e.g. ['value'] or ['reference_interval', 'low']. */
  path: PropertyKey[];
  /** The number as it was parsed (already not what the laboratory wrote when that had trailing zeros or many digits). */
  value: number;
}

/** Every JSON number in `value`, depth first, with where it sits. */
export function numbersIn(value: unknown, path: PropertyKey[] = []): ObservationNumber[] {
  if (typeof value === 'number') return [{ path, value }];
  if (Array.isArray(value)) return value.flatMap((item, i) => numbersIn(item, [...path, i]));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => numbersIn(item, [...path, key]));
  return [];
}

export function observationNumberMessage(value: number): string {
  return `must be a string, not the JSON number ${value}: send the value as the laboratory system printed it, e.g. "1.50" (a JSON number loses how it was written: 1.50 arrives as 1.5)`;
}

/**
 * What an observation's text must be to reach an EHR as valid FHIR R4 (the result's FHIR view,
 * docs/fhir.md): R4's string is `[ \r\n\t\S]+`, so no control character but tab, line feed and
 * carriage return, at any depth (vertical tab and form feed included; NUL and lone surrogates
 * cannot be stored anyway); a top-level value or key that FHIR carries as a string needs a
 * character that is not whitespace (`""` stays allowed: FHIR leaves it out); and no FHIR string
 * exceeds 1 MB, neither a top-level value nor the JSON text a nested value is carried as.
 */
export const FHIR_MAX_STRING_BYTES = 1024 * 1024;
const WHITESPACE_ONLY = /^\s+$/u;

export interface ObservationTextIssue {
  path: PropertyKey[];
  message: string;
  issue: 'invalid_characters' | 'empty_value' | 'too_long';
}

export function observationTextIssues(observation: Record<string, unknown>): ObservationTextIssue[] {
  const issues: ObservationTextIssue[] = [];
  const walk = (value: unknown, path: PropertyKey[]) => {
    if (typeof value === 'string') {
      if (hasRefusedCharacter(value, { multiline: true })) issues.push({ path, issue: 'invalid_characters', message: CONTROL_MESSAGE });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        if (hasRefusedCharacter(key, { multiline: true })) issues.push({ path: [...path, key], issue: 'invalid_characters', message: `the field name ${CONTROL_MESSAGE}` });
        walk(child, [...path, key]);
      }
    }
  };
  walk(observation, []);
  for (const [key, value] of Object.entries(observation)) {
    if (WHITESPACE_ONLY.test(key)) issues.push({ path: [key], issue: 'empty_value', message: 'a field name must have a character that is not whitespace' });
    if (typeof value === 'string' && WHITESPACE_ONLY.test(value)) issues.push({ path: [key], issue: 'empty_value', message: 'must have a character that is not whitespace (send "" or null for no value)' });
    const carried = typeof value === 'string' ? value : value !== null && typeof value === 'object' ? JSON.stringify(value) : '';
    if (Buffer.byteLength(carried) > FHIR_MAX_STRING_BYTES) issues.push({ path: [key], issue: 'too_long', message: 'is over 1 MB, the most a FHIR R4 string holds' });
  }
  return issues;
}

const CONTROL_MESSAGE = 'must not hold control characters other than tab and line breaks (vertical tab and form feed included), NUL or unpaired UTF-16 surrogates: FHIR R4 strings cannot carry them';

/** `observations[2].reference_interval.low`: how a laboratory developer writes a place in their JSON. */
export function formatInputPath(path: InputPath): string {
  return path.reduce<string>((text, key) => (typeof key === 'number' ? `${text}[${key}]` : text ? `${text}.${String(key)}` : String(key)), '') || '(input)';
}

/** The first few numbers of a list of observations, each named by its place, as one sentence. */
export function describeObservationNumbers(observations: readonly unknown[]): string | null {
  const found = observations.flatMap((observation, i) => numbersIn(observation, ['observations', i]));
  if (found.length === 0) return null;
  const shown = describeInputIssues(found.slice(0, 5).map((n) => ({ path: n.path, message: observationNumberMessage(n.value) })));
  return found.length > 5 ? `${shown}; and ${found.length - 5} more numbers` : shown;
}

/** Input issues (Zod's, or the same shape) as one readable line, each led by its place in the input. */
export function describeInputIssues(issues: readonly { path: InputPath; message: string }[]): string {
  return issues.map((issue) => `${formatInputPath(issue.path)}: ${issue.message}`).join('; ');
}
