import { describe, expect, it } from 'vitest';
import { newRequestId } from './request-id';

describe('request ids', () => {
  it('are req_ + 24 hex characters and never repeat, across refills of the random pool', () => {
    const ids = Array.from({ length: 2_000 }, newRequestId);
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
