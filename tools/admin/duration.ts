const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Keys older than ten years are a mistake worth stopping, not a policy anyone means. */
export const MAX_DURATION_MS = 3650 * UNIT_MS.d;

/** Parses `30m`, `12h`, `7d`, `90d` into milliseconds: a whole number and one unit, nothing else. */
export function parseDuration(text: string): number {
  const match = /^(\d+)([mhd])$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a duration: use a whole number followed by m, h or d, e.g. 30m, 12h, 90d`);
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (ms <= 0) throw new Error(`"${text}" is not a duration: it must be longer than zero`);
  if (ms > MAX_DURATION_MS) throw new Error(`"${text}" is too long: at most 3650d`);
  return ms;
}
