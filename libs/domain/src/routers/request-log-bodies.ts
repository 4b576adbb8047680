import { forEachOpenApiProcedure, getInputOutputParsers } from 'trpc-to-openapi';
import type { z } from 'zod';
import type { RequestLogBodies, RouteBodies } from '../request-log/allow-list';
import type { ProcedureMeta } from '../trpc';
import { partnerRouter } from './index';

type Overrides = Omit<RouteBodies, 'input' | 'output'>;

/**
 * An order's specimen codes are the catalog's. Its other strings are not kept: the partner's
 * external ids, and the laboratory's own references (accession number, requisition and
 * transmission references, rejection reason), which identify a person's specimen elsewhere.
 */
const ORDER: Overrides = { keep: ['data.specimens[].specimen_code', 'data.specimens[].specimen_type'] };

/**
 * The sandbox request log's allow-list, route by route (docs/request-log.md, "What is stored of a
 * body"): the one place that says what the log keeps of each route's bodies. Every value is judged
 * by the route's own schemas (request-log/allow-list.ts keeps only what cannot hold text); here are
 * the exceptions: `keep`, strings the service itself wrote; `redact`, values never kept whatever
 * their type; `response: 'shape'`, a response kept as its shape only. A route not listed keeps no
 * value of either body, and request-log-bodies.test.ts fails until it is listed.
 */
const OVERRIDES: Readonly<Record<string, Overrides>> = {
  'GET /v1/health': {},
  'GET /v1/lab': {},
  'GET /v1/locations': {},
  'GET /v1/programs': {},
  'GET /v1/programs/{programId}': {},
  'GET /v1/programs/{programId}/catalog': { keep: ['data[].code', 'data[].lab_test_code', 'data[].external_code', 'data[].kind', 'data[].specimen_type'] },
  'GET /v1/programs/{programId}/requirements': {},
  'POST /v1/serviceability': {},
  'PUT /v1/subjects/{externalSubjectId}': {},
  'POST /v1/orders': ORDER,
  'GET /v1/orders/{orderId}': ORDER,
  'POST /v1/orders/{orderId}/cancel': ORDER,
  'GET /v1/orders/{orderId}/exceptions': {},
  // Results are clinical (observation values, interpretations, the FHIR bundle): shape only.
  'GET /v1/orders/{orderId}/results': { response: 'shape' },
  'GET /v1/orders/{orderId}/results/{resultId}': { response: 'shape' },
  // The bundle's order reference (basedOn) is the service's order id: kept, so the entry can be withheld when that order is withdrawn.
  'GET /v1/orders/{orderId}/results/{resultId}/fhir': { response: 'shape', keep: ['entry[].resource.basedOn[].identifier.value'] },
  'GET /v1/orders/{orderId}/results/{resultId}/report': { keep: ['data.retrieval_path'] },
  'GET /v1/orders/{orderId}/results/{resultId}/report/document': { response: 'shape' },
  // An event carries identifiers and coarse state (events.schemas.ts): the service's own strings of it are kept; whether a result is critical is not.
  'GET /v1/events': {
    keep: ['data.next_cursor', 'data.events[].event_id', 'data.events[].data.specimen_state', 'data.events[].data.result_provenance', 'data.events[].data.action_required_code', 'data.events[].data.links.*'],
    redact: ['data.events[].data.result_is_critical'],
  },
  'GET /v1/sandbox/scenarios': { keep: ['data[].scenario', 'data[].description', 'data[].step_names[]', 'data[].step_details[].name', 'data[].step_details[].operation', 'data[].step_details[].description'] },
  // Synthetic templates the service wrote, but in the shape of personal data: not kept.
  'GET /v1/sandbox/order-fixtures': {},
  'POST /v1/sandbox/orders/{orderId}/simulate': { keep: ['data.scenario', 'data.applied_steps[].name'] },
  // Never logged (a tail would log itself); listed so the table is whole.
  'GET /v1/sandbox/request-log': {},
};

/** `METHOD /template` of every partner REST route, from the router. */
export function partnerRouteKeys(): string[] {
  const keys: string[] = [];
  forEachOpenApiProcedure(partnerRouter._def.procedures, ({ meta }) => {
    const { method, path } = (meta as ProcedureMeta).openapi!;
    keys.push(`${method} ${path}`);
  });
  return keys;
}

/** The table the request log's writer is given: each listed route with its procedure's own schemas. */
export function requestLogBodies(): RequestLogBodies {
  const table = new Map<string, RouteBodies>();
  forEachOpenApiProcedure(partnerRouter._def.procedures, ({ procedure, meta }) => {
    const { method, path } = (meta as ProcedureMeta).openapi!;
    const key = `${method} ${path}`;
    const overrides = OVERRIDES[key];
    if (!overrides) return;
    const { inputParser, outputParser } = getInputOutputParsers(procedure as never);
    table.set(key, { input: inputParser as z.ZodType, output: outputParser as z.ZodType, ...overrides });
  });
  return table;
}

/** Routes of the table the router does not have (a renamed route): the test names them. */
export const listedRouteKeys = (): string[] => Object.keys(OVERRIDES);
