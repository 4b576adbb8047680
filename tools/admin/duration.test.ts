import { describe, expect, it } from 'vitest';
import { MAX_DURATION_MS, parseDuration } from './duration';

describe('parseDuration', () => {
  it.each([
    ['30m', 30 * 60_000],
    ['12h', 12 * 3_600_000],
    ['7d', 7 * 86_400_000],
    ['90d', 90 * 86_400_000],
    [' 1h ', 3_600_000],
  ])('reads %s as a number and one unit', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it('accepts exactly the longest allowed duration', () => {
    expect(parseDuration('3650d')).toBe(MAX_DURATION_MS);
  });

  it.each(['', '7', 'd', '7 d', '1.5h', '-1d', '7days', '7D', '30s', '1w', '1h30m', 'P7D'])('refuses %j: only a whole number and m, h or d', (text) => {
    expect(() => parseDuration(text)).toThrow(/not a duration/);
  });

  it('refuses zero, which would issue a key that is already expired', () => {
    expect(() => parseDuration('0d')).toThrow(/longer than zero/);
  });

  it('refuses more than ten years', () => {
    expect(() => parseDuration('3651d')).toThrow(/at most 3650d/);
    expect(() => parseDuration('99999999999999999999m')).toThrow(/at most 3650d/);
  });
});
