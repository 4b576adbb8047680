import { describe, expect, it } from 'vitest';
import { forEachOpenApiProcedure, getInputOutputParsers } from 'trpc-to-openapi';
import type { ProcedureMeta } from '../trpc';
import { partnerRouter } from './index';
import { listedRouteKeys, partnerRouteKeys, requestLogBodies } from './request-log-bodies';

describe('the request log\'s allow-list table', () => {
  it('lists every partner route, and no route the router lacks: a new route fails here until it is listed (unlisted, it keeps no body value)', () => {
    expect(partnerRouteKeys().length).toBeGreaterThan(20);
    expect([...listedRouteKeys()].sort()).toEqual([...partnerRouteKeys()].sort());
  });

  it('judges each route by its own procedure\'s schemas', () => {
    const table = requestLogBodies();
    forEachOpenApiProcedure(partnerRouter._def.procedures, ({ procedure, meta }) => {
      const { method, path } = (meta as ProcedureMeta).openapi!;
      const { inputParser, outputParser } = getInputOutputParsers(procedure as never);
      expect(table.get(`${method} ${path}`)?.input).toBe(inputParser);
      expect(table.get(`${method} ${path}`)?.output).toBe(outputParser);
    });
  });
});
