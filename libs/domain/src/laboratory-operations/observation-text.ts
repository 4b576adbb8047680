/**
 * Spec rule 6 at the laboratory boundary: observation values, units, reference intervals and flags
 * are returned exactly as the laboratory supplied them, so they are taken as text. A JSON number
 * cannot be kept that way: it is rewritten by the first JSON parser it meets, before any code of
 * ours sees it (1.50 arrives as 1.5, 12345678901234567890 as 12345678901234567000). So a number
 * anywhere in an observation is refused with the place it was found, never stored. Strings,
 * booleans and null survive parsing unchanged and are accepted.
 */

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
