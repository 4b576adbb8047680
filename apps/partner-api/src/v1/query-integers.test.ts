import { beforeAll, describe, expect, it } from 'vitest';
import { type TestResponse } from '../testing/harness';
import { expectError, expectList, expectSuccess } from '../testing/expect-envelope';
import { unique } from '@lop/testing';
import { ordersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

/**
 * Integers arrive as plain decimal or not at all. Query strings are text, and JavaScript's reading
 * of text as a number (z.coerce.number) takes `0x10` as 16 and `1e2` as 100; the tRPC door sends
 * JSON, so a number may arrive typed there and must be an integer in range too.
 */
const scene = useScene({ rateLimit: false, partner: 'demo', key: true });
const { api } = scene;
let orderTemplate: Record<string, unknown>;

type Detail = { field?: string; issue: string };

beforeAll(async () => {
  orderTemplate = expectList(await api.call('GET', '/v1/sandbox/order-fixtures', { key: scene.key })).find((fixture) => fixture.contract === 'minimal').body;
});

const rest = (query: string) => api.call('GET', `/v1/events?${query}`, { key: scene.key });
const trpcQuery = (procedure: string, input: unknown) =>
  api.fetch('GET', `/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: { authorization: `Bearer ${scene.key}` } });

/** The REST envelope of a tRPC failure (the console door carries it in data.partner). */
function trpcError(response: TestResponse, status: number): { code: string; details?: Detail[] } {
  expect(response.status, response.text).toBe(status);
  return response.body.error.data.partner.error;
}

const REFUSED_TEXT: [text: string, issue: string][] = [
  ['0', 'too_small'],
  ['501', 'too_large'],
  ['99999999999999999999', 'too_large'],
  ['0x10', 'invalid_format'],
  ['0o20', 'invalid_format'],
  ['0b10000', 'invalid_format'],
  ['1e2', 'invalid_format'],
  [' 5', 'invalid_format'],
  ['5 ', 'invalid_format'],
  ['5.0', 'invalid_format'],
  ['+5', 'invalid_format'],
  ['-1', 'invalid_format'],
  ['05', 'invalid_format'],
  ['1_0', 'invalid_format'],
  ['Infinity', 'invalid_format'],
  ['١٠', 'invalid_format'],
];

describe('GET /v1/events?limit= (REST)', () => {
  it.each(['1', '16', '100', '500'])('limit=%s is accepted', async (limit) => {
    expectSuccess(await rest(`limit=${limit}`));
  });

  it.each(REFUSED_TEXT)('limit=%j → 400 invalid_request, exactly one detail {field: limit, issue: %s}', async (limit, issue) => {
    const error = expectError(await rest(`limit=${encodeURIComponent(limit)}`), 400, 'invalid_request');
    expect(error.details).toEqual([expect.objectContaining({ field: 'limit', issue })]);
  });

  it('a number beyond any integer (limit=99999999999999999999) is one too_large detail quoting the endpoint’s maximum, not JavaScript’s', async () => {
    const error = expectError(await rest('limit=99999999999999999999'), 400, 'invalid_request');
    expect(error.details).toHaveLength(1);
    expect(error.details![0].message).toContain('500');
    expect(JSON.stringify(error)).not.toContain('9007199254740991');
  });
});

describe('events.list and console.orders on the tRPC door', () => {
  // REST first: trpc-to-openapi's adapter switches coercion on for number fields of the schemas it
  // serves, shared with the tRPC door, so a REST call must not loosen what tRPC accepts after it.
  beforeAll(async () => {
    expect((await rest('limit=5')).status).toBe(200);
    expect((await rest('limit=0x10')).status).toBe(400);
  });

  it.each([1, 500, '1', '500'])('events.list takes limit %j', async (limit) => {
    expect((await trpcQuery('events.list', { limit })).status).toBe(200);
  });

  it.each([...REFUSED_TEXT, [0, 'too_small'], [501, 'too_large'], [1.5, 'invalid_type'], [-1, 'too_small'], [true, 'invalid_format'], [null, 'invalid_format'], [[5], 'invalid_format']] as [unknown, string][])(
    'events.list refuses limit %j with 400 invalid_request, issue %s',
    async (limit, issue) => {
      const error = trpcError(await trpcQuery('events.list', { limit }), 400);
      expect(error.code).toBe('invalid_request');
      expect(error.details).toContainEqual(expect.objectContaining({ field: 'limit', issue }));
    },
  );

  it('console.orders: 1 to 100, plain decimal or a typed integer; 0x10, 1e2, 1.5 and 101 refused', async () => {
    for (const limit of [1, 100, '1', '100']) expect((await trpcQuery('console.orders', { limit })).status, String(limit)).toBe(200);
    for (const [limit, issue] of [['0x10', 'invalid_format'], ['1e2', 'invalid_format'], [1.5, 'invalid_type'], [101, 'too_large'], ['101', 'too_large'], [0, 'too_small']] as const) {
      const error = trpcError(await trpcQuery('console.orders', { limit }), 400);
      expect(error.details, String(limit)).toContainEqual(expect.objectContaining({ field: 'limit', issue }));
    }
  });
});

describe('integers in a JSON body (sandbox simulate `steps`)', () => {
  const newOrder = async () => expectSuccess(await ordersClient(api, scene.key).create({ ...orderTemplate, external_order_id: unique('int') }), 201).order_id as string;

  it('are JSON numbers on both doors: "1", "0x1", true and 1.5 are refused, 1 is accepted', async () => {
    const orderId = await newOrder();
    const restSimulate = (steps: unknown) => api.call('POST', `/v1/sandbox/orders/${orderId}/simulate`, { key: scene.key, json: { scenario: 'happy_path', steps } });
    const trpcSimulate = (steps: unknown) => api.fetch('POST', '/api/trpc/sandbox.simulate', { json: { orderId, scenario: 'happy_path', steps }, headers: { authorization: `Bearer ${scene.key}` } });
    for (const steps of ['1', '0x1', true, 1.5]) {
      const restError = expectError(await restSimulate(steps), 400, 'invalid_request');
      expect(restError.details, `REST ${JSON.stringify(steps)}`).toContainEqual(expect.objectContaining({ field: 'steps' }));
      const error = trpcError(await trpcSimulate(steps), 400);
      expect(error.details, `tRPC ${JSON.stringify(steps)}`).toContainEqual(expect.objectContaining({ field: 'steps' }));
    }
    expect(expectSuccess(await restSimulate(1)).steps_applied).toBe(1);
    expect((await trpcSimulate(1)).status).toBe(200);
  });
});
