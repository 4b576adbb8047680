import { randomUUID } from 'node:crypto';
import { LIMITS } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { programs } from '@lop/db';
import { orderSchema } from '@lop/domain';
import { type TestResponse } from '../testing/harness';
import { buildTenant, unique } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { orderBody, ordersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

const LONG_METHOD = 'm'.repeat(LIMITS.collection);
const LONG_REGION = 'R'.repeat(LIMITS.region);

describe('POST /v1/orders: the create request and its bounds', () => {
  const scene = useScene({ rateLimit: false, client: true });
  const { api, tenant, client, connection, fixtures: f } = scene;
  const body = (overrides: Record<string, unknown> = {}) => orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject, overrides);

  beforeAll(async () => {
    // The program accepts a collection method and serves a region exactly as long as the limits,
    // so values at the limit are not just schema-valid but orderable (201).
    await connection.db
      .update(programs)
      .set({ collectionMethods: ['in_person_draw', LONG_METHOD], serviceGeography: [tenant.region, LONG_REGION] })
      .where(eq(programs.id, tenant.sandbox.program.id));
  });

  const ordersWith = async (externalOrderId: string) =>
    (await connection.sql`select id from orders where client_id = ${tenant.clientId} and external_order_id = ${externalOrderId}`).length;

  function expectInvalid(response: TestResponse, field: string, issue: string) {
    const error = expectError(response, 400, 'invalid_request');
    expect(error.details).toContainEqual(expect.objectContaining({ field, issue }));
    return error;
  }

  it('a minimal request → 201 with the Order resource, pending/received, no replay header', async () => {
    const request = body();
    const response = await client.create(request);
    const order = expectSuccess(response, 201);
    expect(orderSchema.strict().safeParse(order).success, JSON.stringify(order)).toBe(true);
    expect(order).toMatchObject({
      external_order_id: request.external_order_id,
      program_id: tenant.sandbox.program.id,
      item_id: tenant.sandbox.item.id,
      external_subject_id: scene.subject,
      environment: 'sandbox',
      lifecycle: 'pending',
      lifecycle_detail: 'received',
      next_action: 'wait_for_laboratory',
      specimens: [],
    });
    expect(response.headers.get('idempotent-replayed')).toBeNull();
    expectSuccess(await client.get(order.order_id));
  });

  it('the stored order holds each optional field exactly as sent, and SQL NULL where it was left out', async () => {
    const full = expectSuccess(
      await client.create(body({ region: tenant.region, billing_mode: 'self_pay', collection_location: 'LOC-1', requested_collection_at: '2026-12-01T09:30:00+01:00' })),
      201,
    );
    const minimal = expectSuccess(await client.create(body()), 201);
    const stored = async (id: string) =>
      (
        await connection.sql`
          select region, billing_mode, collection_location, to_char(requested_collection_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as requested_collection_at, protected_data, synthetic, collection, lifecycle_detail, created_at = updated_at as same_times
          from orders where id = ${id}`
      )[0];
    expect(await stored(full.order_id)).toEqual({
      region: tenant.region,
      billing_mode: 'self_pay',
      collection_location: 'LOC-1',
      requested_collection_at: '2026-12-01T08:30:00Z',
      protected_data: null,
      synthetic: true,
      collection: 'in_person_draw',
      lifecycle_detail: 'received',
      same_times: true,
    });
    expect(await stored(minimal.order_id)).toMatchObject({ region: null, billing_mode: null, collection_location: null, requested_collection_at: null, protected_data: null });
  });

  it('more concurrent creates than the API has database connections all complete or are refused at once (no pool deadlock)', async () => {
    // startTestApi runs the API with a pool of 4 connections.
    const responses = await Promise.all(Array.from({ length: 24 }, () => client.create(body())));
    // The client's write gate (docs/operations.md) may refuse part of a burst on a loaded machine: 429 with Retry-After, nothing else.
    const refused = responses.filter((r) => r.status !== 201);
    for (const response of refused) {
      expect(expectError(response, 429, 'rate_limited').details?.[0].issue).toBe('too_many_concurrent_writes');
      expect(response.headers.get('retry-after')).toBe('1');
    }
    expect(refused.length).toBeLessThan(responses.length / 2);
  });

  describe('each bounded field: the limit is accepted, one past it is 400 too_long naming the field', () => {
    const bounded: { field: string; limit: number; atLimit: () => Promise<Record<string, unknown>> }[] = [
      { field: 'external_order_id', limit: LIMITS.externalOrderId, atLimit: async () => ({ external_order_id: unique('x').padEnd(LIMITS.externalOrderId, 'x') }) },
      {
        field: 'external_subject_id',
        limit: LIMITS.externalSubjectId,
        atLimit: async () => ({ external_subject_id: await client.subject(unique('s').padEnd(LIMITS.externalSubjectId, 's')) }),
      },
      { field: 'collection', limit: LIMITS.collection, atLimit: async () => ({ collection: LONG_METHOD }) },
      { field: 'region', limit: LIMITS.region, atLimit: async () => ({ region: LONG_REGION }) },
      { field: 'clinical_notes', limit: LIMITS.clinicalNotes, atLimit: async () => ({ clinical_notes: 'n'.repeat(LIMITS.clinicalNotes) }) },
      { field: 'billing_mode', limit: LIMITS.billingMode, atLimit: async () => ({ billing_mode: 'b'.repeat(LIMITS.billingMode) }) },
      { field: 'collection_location', limit: LIMITS.collectionLocation, atLimit: async () => ({ collection_location: 'l'.repeat(LIMITS.collectionLocation) }) },
    ];

    it('the limits are the spec’s numbers', () => {
      expect(LIMITS).toEqual({ idempotencyKey: 190, externalOrderId: 190, externalSubjectId: 190, collectionLocation: 190, collection: 40, billingMode: 40, region: 80, clinicalNotes: 2000 });
    });

    it.each(bounded)('$field: $limit characters → 201', async ({ field, limit, atLimit }) => {
      const overrides = await atLimit();
      expect(String(overrides[field])).toHaveLength(limit);
      const order = expectSuccess(await client.create(body(overrides)), 201);
      if (field === 'external_order_id' || field === 'external_subject_id') expect(order[field]).toBe(overrides[field]);
    });

    it.each(bounded)('$field: $limit + 1 characters → 400 invalid_request, too_long in the API\'s own words, and no order', async ({ field, limit, atLimit }) => {
      const overrides = await atLimit();
      const request = body({ [field]: `${String(overrides[field])}z` });
      const error = expectInvalid(await client.create(request), field, 'too_long');
      expect(error.details!.find((d) => d.field === field)!.message).toBe(`Must be at most ${limit} characters long.`);
      expect(await ordersWith(request.external_order_id)).toBe(0);
    });

    it('lengths are characters, not bytes: 190 accented letters are a valid external_order_id, 191 are not', async () => {
      const letters = 'àáâãäåèéêëìíîïòóôõöùúûü';
      const id = Array.from({ length: LIMITS.externalOrderId }, () => letters[Math.floor(Math.random() * letters.length)]).join('');
      expect(Buffer.byteLength(id)).toBe(2 * LIMITS.externalOrderId);
      expect(expectSuccess(await client.create(body({ external_order_id: id })), 201).external_order_id).toBe(id);
      expectInvalid(await client.create(body({ external_order_id: `${id}é` })), 'external_order_id', 'too_long');
    });

    it('Idempotency-Key: 190 characters → 201', async () => {
      expectSuccess(await client.create(body(), { idempotencyKey: unique('k').padEnd(LIMITS.idempotencyKey, 'k') }), 201);
    });

    it('Idempotency-Key lengths are characters of its UTF-8 text, not bytes: 190 × é → 201 and replays; 191 × é → 400 too_long', async () => {
      // A header travels as bytes: the UTF-8 bytes of the key, as curl or any HTTP client sends them.
      const asSent = (key: string) => Buffer.from(key, 'utf8').toString('latin1');
      const key = `${unique('é')}`.padEnd(LIMITS.idempotencyKey, 'é');
      expect(Buffer.byteLength(key)).toBeGreaterThan(LIMITS.idempotencyKey);
      const request = body();
      const first = await client.create(request, { idempotencyKey: asSent(key) });
      const order = expectSuccess(first, 201);
      const again = await client.create(request, { idempotencyKey: asSent(key) });
      expect(expectSuccess(again, 201).order_id).toBe(order.order_id);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      const over = body();
      expectInvalid(await client.create(over, { idempotencyKey: asSent(`${key}é`) }), 'Idempotency-Key', 'too_long');
      expect(await ordersWith(over.external_order_id)).toBe(0);
    });

    it('Idempotency-Key: 191 characters → 400 invalid_request too_long naming Idempotency-Key, and no order', async () => {
      const request = body();
      expectInvalid(await client.create(request, { idempotencyKey: 'k'.repeat(LIMITS.idempotencyKey + 1) }), 'Idempotency-Key', 'too_long');
      expect(await ordersWith(request.external_order_id)).toBe(0);
    });
  });

  describe('malformed requests are 400 invalid_request and create nothing', () => {
    it('missing Idempotency-Key header → 400 naming it (required)', async () => {
      const request = body();
      expectInvalid(await client.create(request, { idempotencyKey: null }), 'Idempotency-Key', 'required');
      expect(await ordersWith(request.external_order_id)).toBe(0);
    });

    it('empty Idempotency-Key header → 400 naming it', async () => {
      const request = body();
      expectInvalid(await client.create(request, { idempotencyKey: '' }), 'Idempotency-Key', 'required');
      expect(await ordersWith(request.external_order_id)).toBe(0);
    });

    it.each([
      { where: 'top level', extra: { priority: 'stat' }, field: 'priority' },
      { where: 'patient', extra: { patient: { legal_first_name: 'A', nickname: 'B' } }, field: 'patient.nickname' },
      { where: 'ordering_provider', extra: { ordering_provider: { name: 'Dr A', license: 'X' } }, field: 'ordering_provider.license' },
      { where: 'aoe_answers item', extra: { aoe_answers: [{ question_key: 'q', answer: 'a', note: 'n' }] }, field: 'aoe_answers.0.note' },
    ])('an unknown field ($where) → 400 unknown_field naming it', async ({ extra, field }) => {
      const request = body(extra);
      expectInvalid(await client.create(request), field, 'unknown_field');
      expect(await ordersWith(request.external_order_id)).toBe(0);
    });

    it.each(['external_order_id', 'program_id', 'item_id', 'external_subject_id', 'collection'])('missing required %s → 400 required naming it', async (field) => {
      const request: Record<string, unknown> = body();
      delete request[field];
      expectInvalid(await client.create(request), field, 'required');
    });

    it.each([
      { field: 'program_id', value: 'not-a-uuid', issue: 'invalid_format' },
      { field: 'item_id', value: 42, issue: 'invalid_type' },
      { field: 'collection', value: '', issue: 'required' },
      { field: 'requested_collection_at', value: 'tomorrow', issue: 'invalid_format' },
      { field: 'aoe_answers', value: 'yes', issue: 'invalid_type' },
      { field: 'ordering_provider.provider_reference', value: 'nope', issue: 'invalid_format' },
    ])('ill-typed $field → 400 $issue naming it', async ({ field, value, issue }) => {
      const [head, tail] = field.split('.');
      const request = body(tail ? { [head]: { [tail]: value } } : { [head]: value });
      expectInvalid(await client.create(request), field, issue);
    });

    it('malformed JSON → 400 invalid_request malformed_json', async () => {
      const response = await api.call('POST', '/v1/orders', {
        key: client.key,
        rawBody: '{"external_order_id": "x", ',
        headers: { 'content-type': 'application/json', 'idempotency-key': unique('idem') },
      });
      const error = expectError(response, 400, 'invalid_request');
      expect(error.details).toEqual([{ issue: 'malformed_json' }]);
    });

    it.each([
      { what: 'an array', raw: '[]' },
      { what: 'null', raw: 'null' },
      { what: 'a string', raw: '"order"' },
      { what: 'a number', raw: '42' },
      { what: 'true', raw: 'true' },
    ])('a JSON body that is $what is valid JSON but not an object → 400 invalid_request, issue not_an_object (never "not valid JSON")', async ({ raw }) => {
      const response = await api.call('POST', '/v1/orders', { key: client.key, rawBody: raw, headers: { 'content-type': 'application/json', 'idempotency-key': unique('idem') } });
      const error = expectError(response, 400, 'invalid_request');
      expect(error.details).toEqual([{ issue: 'not_an_object' }]);
      expect(error.message).toBe('The request body must be a JSON object.');
    });

    it('no key → 401; a key without orders:write → 403 forbidden, nothing created', async () => {
      const request = body();
      expectError(await api.call('POST', '/v1/orders', { json: request, headers: { 'idempotency-key': unique('idem') } }), 401, 'unauthorized');
      const readOnly = ordersClient(api, await tenant.key({ scopes: ['orders:read', 'orders:cancel', 'events:read'] }));
      expectError(await readOnly.create(request), 403, 'forbidden');
      expect(await ordersWith(request.external_order_id)).toBe(0);
    });
  });

  describe('read and cancel need their own scopes; unknown orders are 404', () => {
    it('GET and cancel: a key lacking orders:read / orders:cancel → 403; a malformed or unknown id → 404', async () => {
      const order = expectSuccess(await client.create(body()), 201);
      const writeOnly = ordersClient(api, await tenant.key({ scopes: ['orders:write'] }));
      expectError(await writeOnly.get(order.order_id), 403, 'forbidden');
      expectError(await writeOnly.cancel(order.order_id), 403, 'forbidden');
      expectError(await client.get('not-a-uuid'), 404, 'not_found');
      expectError(await client.cancel('not-a-uuid'), 404, 'not_found');
      expectError(await client.get(randomUUID()), 404, 'not_found');
      expectError(await client.cancel(randomUUID()), 404, 'not_found');
    });

    it("another client's order, and this client's order under its production key, are 404 for read and cancel", async () => {
      const order = expectSuccess(await client.create(body()), 201);
      const other = await buildTenant(f);
      const outsider = ordersClient(api, await other.key());
      const production = ordersClient(api, await tenant.key({ environment: 'production' }));
      for (const stranger of [outsider, production]) {
        const response = await stranger.get(order.order_id);
        expectError(response, 404, 'not_found');
        expectError(await stranger.cancel(order.order_id), 404, 'not_found');
      }
      expect(expectSuccess(await client.get(order.order_id)).lifecycle).toBe('pending');
    });
  });
});
