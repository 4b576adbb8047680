import { describe, expect, it } from 'vitest';
import { medianBy } from './scale';

describe('the scale bench’s rounds', () => {
  it('report the median round of a measure, a measurement that was taken, never a blend of two', () => {
    const rounds = [{ p99: 41 }, { p99: 139 }, { p99: 38 }];
    expect(medianBy(rounds, (r) => r.p99)).toBe(rounds[0]);
    // An even count takes the lower middle: the figure stays one that some round measured.
    expect(medianBy([{ p99: 50 }, { p99: 30 }, { p99: 40 }, { p99: 60 }], (r) => r.p99)).toEqual({ p99: 40 });
    expect(medianBy([{ p99: 7 }], (r) => r.p99)).toEqual({ p99: 7 });
  });
});
