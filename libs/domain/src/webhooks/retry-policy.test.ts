import { SPEC_RETRY_DELAYS_SECONDS } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { classifyStatus, decideNext, maxAttempts, parseRetryAfter, type AttemptResult, type Decision } from './retry-policy';

const spec = { delaysSeconds: SPEC_RETRY_DELAYS_SECONDS, retryAfterMaxSeconds: 3600 };
const NOW = Date.parse('2026-03-01T12:00:00Z');
const httpDate = (offsetSeconds: number) => new Date(NOW + offsetSeconds * 1000).toUTCString();
const response = (status: number, retryAfter?: string): AttemptResult => ({ kind: 'response', status, retryAfter });

describe('retry policy', () => {
  it('allows seven attempts in total with the spec schedule', () => {
    expect(maxAttempts(spec)).toBe(7);
  });

  it.each<[status: number, expected: ReturnType<typeof classifyStatus>]>([
    [200, 'success'],
    [201, 'success'],
    [204, 'success'],
    [299, 'success'],
    [301, 'permanent'],
    [302, 'permanent'],
    [307, 'permanent'],
    [308, 'permanent'],
    [400, 'permanent'],
    [401, 'permanent'],
    [403, 'permanent'],
    [404, 'permanent'],
    [410, 'permanent'],
    [413, 'permanent'],
    [422, 'permanent'],
    [408, 'temporary'],
    [409, 'temporary'],
    [425, 'temporary'],
    [429, 'temporary'],
    [500, 'temporary'],
    [502, 'temporary'],
    [503, 'temporary'],
    [504, 'temporary'],
    [599, 'temporary'],
  ])('status %i is %s', (status, expected) => {
    expect(classifyStatus(status)).toBe(expected);
  });

  it.each<[name: string, result: AttemptResult, attempt: number, expected: Decision]>([
    ['2xx delivers', response(200), 1, { outcome: 'delivered' }],
    ['2xx on the last attempt delivers', response(202), 7, { outcome: 'delivered' }],
    ['500 on attempt 1 waits 1 minute', response(500), 1, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 60, retryAfterSeconds: null }],
    ['503 on attempt 2 waits 5 minutes', response(503), 2, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 300, retryAfterSeconds: null }],
    ['timeout on attempt 3 waits 30 minutes', { kind: 'timeout' }, 3, { outcome: 'retry', errorClass: 'timeout', delaySeconds: 1800, retryAfterSeconds: null }],
    ['network failure on attempt 4 waits 2 hours', { kind: 'network' }, 4, { outcome: 'retry', errorClass: 'network', delaySeconds: 7200, retryAfterSeconds: null }],
    ['429 on attempt 5 waits 12 hours', response(429), 5, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 43_200, retryAfterSeconds: null }],
    ['408 on attempt 6 waits 24 hours', response(408), 6, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 86_400, retryAfterSeconds: null }],
    ['500 on attempt 7 is exhausted', response(500), 7, { outcome: 'dead_lettered', errorClass: 'http_status', reason: 'exhausted' }],
    ['timeout on attempt 7 is exhausted', { kind: 'timeout' }, 7, { outcome: 'dead_lettered', errorClass: 'timeout', reason: 'exhausted' }],
    ['400 is permanent at once', response(400), 1, { outcome: 'dead_lettered', errorClass: 'http_status', reason: 'permanent' }],
    ['404 is permanent at once', response(404), 3, { outcome: 'dead_lettered', errorClass: 'http_status', reason: 'permanent' }],
    ['302 is permanent: redirects are never followed', response(302), 1, { outcome: 'dead_lettered', errorClass: 'redirect', reason: 'permanent' }],
    ['a blocked destination is permanent', { kind: 'blocked_destination' }, 1, { outcome: 'dead_lettered', errorClass: 'blocked_destination', reason: 'permanent' }],
    ['Retry-After seconds longer than the schedule wins', response(429, '900'), 1, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 900, retryAfterSeconds: 900 }],
    ['Retry-After shorter than the schedule keeps the schedule', response(503, '5'), 2, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 300, retryAfterSeconds: 5 }],
    ['Retry-After above 60 minutes is capped at 60 minutes', response(429, '7200'), 1, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 3600, retryAfterSeconds: 7200 }],
    ['a capped Retry-After never shortens a longer schedule step', response(429, '99999'), 6, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 86_400, retryAfterSeconds: 99_999 }],
    ['Retry-After as an HTTP date is honoured', response(503, httpDate(1200)), 1, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 1200, retryAfterSeconds: 1200 }],
    ['Retry-After as a far HTTP date is capped', response(503, httpDate(86_400)), 1, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 3600, retryAfterSeconds: 86_400 }],
    ['an unreadable Retry-After is ignored', response(429, 'soon'), 1, { outcome: 'retry', errorClass: 'http_status', delaySeconds: 60, retryAfterSeconds: null }],
    ['Retry-After on a permanent failure changes nothing', response(400, '10'), 1, { outcome: 'dead_lettered', errorClass: 'http_status', reason: 'permanent' }],
  ])('%s', (_name, result, attempt, expected) => {
    expect(decideNext(result, attempt, spec, NOW)).toEqual(expected);
  });

  it('uses whatever schedule it is given, so tests can run all seven attempts in seconds', () => {
    const quick = { delaysSeconds: [0.01, 0.02, 0.03, 0.04, 0.05, 0.06], retryAfterMaxSeconds: 2 };
    const delays = [1, 2, 3, 4, 5, 6].map((n) => decideNext(response(500), n, quick, NOW));
    expect(delays.map((d) => (d.outcome === 'retry' ? d.delaySeconds : d.outcome))).toEqual([0.01, 0.02, 0.03, 0.04, 0.05, 0.06]);
    expect(decideNext(response(500), 7, quick, NOW)).toMatchObject({ outcome: 'dead_lettered', reason: 'exhausted' });
    expect(decideNext(response(429, '3600'), 1, quick, NOW)).toMatchObject({ outcome: 'retry', delaySeconds: 2 });
  });

  it.each<[value: string | null, seconds: number | null]>([
    [null, null],
    ['0', 0],
    ['120', 120],
    [' 30 ', 30],
    ['-5', null],
    ['1.5', null],
    ['', null],
    [httpDate(60), 60],
    [httpDate(-60), 0],
    ['Sun, 06 Nov 1994 08:49:37 GMT', 0],
    ['tomorrow', null],
  ])('Retry-After %j means %j seconds', (value, seconds) => {
    expect(parseRetryAfter(value, NOW)).toBe(seconds);
  });
});
