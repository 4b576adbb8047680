import { describe, expect, it } from 'vitest';
import { requestLogBodies } from '../routers/request-log-bodies';
import { allowListedBodies, NO_BODIES, sentStrings } from './allow-list';

const PROGRAM = '00000000-0000-4000-8000-000000000001';
const ORDER = '00000000-0000-4000-8000-000000000003';

const table = requestLogBodies();
const bodies = (method: string, route: string, status: number, requestBody: unknown, responseBody: unknown, ...sent: unknown[]) =>
  allowListedBodies(table, { method, route, status, requestBody, responseBody, sent: () => sentStrings(requestBody, ...sent) });

describe('the request log keeps what the allow-list names, and only the type and size of the rest', () => {
  it('a refused order: unknown fields, free text and the partner\'s own identifiers are type and size; ids, enums and timestamps are kept', () => {
    const request = {
      external_order_id: 'ord-jane.doe@example.org',
      program_id: PROGRAM,
      item_id: 'Jane Doe',
      external_subject_id: '+1 555 010 9999',
      collection: 'in_person_draw',
      collection_location: 'Dr Jane Doe\'s back office',
      requested_collection_at: '2026-01-31T09:30:00Z',
      patient: { legal_first_name: 'Jane', sex_at_birth: 'female' },
      clinical_notes: 'diabetic on metformin',
      notes: 'diabetic on metformin',
    };
    const { request: kept } = bodies('POST', '/v1/orders', 400, request, undefined);
    expect(kept).toEqual({
      external_order_id: { $redacted: 'string', length: 24 },
      program_id: PROGRAM,
      item_id: { $redacted: 'string', length: 8 },
      external_subject_id: { $redacted: 'string', length: 15 },
      // A plain string in the schema, however harmless this value: not kept.
      collection: { $redacted: 'string', length: 14 },
      collection_location: { $redacted: 'string', length: 25 },
      requested_collection_at: '2026-01-31T09:30:00Z',
      patient: { $redacted: 'object', length: 2 },
      clinical_notes: { $redacted: 'string', length: 21 },
      $unknown_fields: [{ $redacted: 'string', length: 21 }],
    });
  });

  it('an enum keeps only a value it allows, a number only a number', () => {
    const ok = bodies('POST', '/v1/sandbox/orders/{orderId}/simulate', 200, { scenario: 'happy_path', steps: 2 }, undefined).request;
    expect(ok).toEqual({ scenario: 'happy_path', steps: 2 });
    const refused = bodies('POST', '/v1/sandbox/orders/{orderId}/simulate', 400, { scenario: 'Jane Doe', steps: '555 0100' }, undefined).request;
    expect(refused).toEqual({ scenario: { $redacted: 'string', length: 8 }, steps: { $redacted: 'string', length: 8 } });
  });

  it('a route with no entry keeps no value at all, nor does a writer given no table', () => {
    expect(allowListedBodies(NO_BODIES, { method: 'POST', route: '/v1/sandbox/orders/{orderId}/simulate', status: 200, requestBody: { scenario: 'happy_path' }, responseBody: { request_id: 'req_1' }, sent: () => new Set() })).toEqual({
      request: { $redacted: 'object', length: 1 },
      response: { $redacted: 'object', length: 1 },
    });
    expect(bodies('POST', '/v1/not-listed', 200, { scenario: 'happy_path' }, { data: { id: ORDER }, request_id: 'req_1' })).toEqual({
      request: { $redacted: 'object', length: 1 },
      response: { $redacted: 'object', length: 2 },
    });
  });

  it('an error keeps its code and issue names; an unknown field\'s name and any sentence repeating what was sent are not kept', () => {
    const error = {
      error: {
        code: 'invalid_request',
        message: 'No order for jane.doe@example.org here.',
        details: [
          { field: 'Jane Doe', issue: 'unknown_field', message: 'This field is not accepted here.' },
          { field: 'patient.nickname', issue: 'unknown_field', message: 'This field is not accepted here.' },
          { field: 'external_order_id', issue: 'too_long', message: 'Must be at most 190 characters long.' },
          { field: 'aoe_answers.0.answer', issue: 'Diabetic on metformin' },
        ],
      },
      request_id: 'req_abc',
    };
    const { response } = bodies('POST', '/v1/orders', 400, { 'Jane Doe': 1 }, error, ['', 'v1', 'orders'], { q: 'jane.doe@example.org' });
    expect(response).toEqual({
      error: {
        code: 'invalid_request',
        message: 'No order for [redacted] here.',
        details: [
          { field: { $redacted: 'string', length: 8 }, issue: 'unknown_field', message: 'This field is not accepted here.' },
          { field: { $redacted: 'string', length: 16 }, issue: 'unknown_field', message: 'This field is not accepted here.' },
          { field: 'external_order_id', issue: 'too_long', message: 'Must be at most 190 characters long.' },
          { field: 'aoe_answers.0.answer', issue: { $redacted: 'string', length: 21 } },
        ],
      },
      request_id: 'req_abc',
    });
  });

  it('an order in a response keeps its state, never the partner\'s identifiers; a result is shape only but for the service\'s ids', () => {
    const order = { data: { order_id: ORDER, external_order_id: 'Jane Doe', external_subject_id: 'jane@example.org', lifecycle: 'active', specimens: [{ specimen_code: 'LAV', rejection_reason: 'Jane Doe' }] }, request_id: 'req_1' };
    expect(bodies('GET', '/v1/orders/{orderId}', 200, undefined, order).response).toEqual({
      data: {
        order_id: ORDER,
        external_order_id: { $redacted: 'string', length: 8 },
        external_subject_id: { $redacted: 'string', length: 16 },
        lifecycle: 'active',
        specimens: [{ specimen_code: 'LAV', rejection_reason: { $redacted: 'string', length: 8 } }],
      },
      request_id: 'req_1',
    });
    const result = { data: { result_id: ORDER, status: 'final', observations: [{ code: 'GLU', value: '7.9', flag: 'H' }] }, request_id: 'req_2' };
    const stored = bodies('GET', '/v1/orders/{orderId}/results/{resultId}', 200, undefined, result).response as { data: Record<string, unknown> };
    // Its id says which result (and so which order) the entry is about: withheld when that order's program is withdrawn.
    expect(stored.data.result_id).toBe(ORDER);
    expect(JSON.stringify(stored)).not.toMatch(/GLU|7\.9|"H"|final/);
  });
});
