import { randomBytes, randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { inArray } from 'drizzle-orm';
import { getInputOutputParsers } from 'trpc-to-openapi';
import { sandboxRequestLog } from '@lop/db';
import { demoId } from '@lop/domain';
import { unique } from '@lop/testing';
import { type TestResponse } from '../testing/harness';
import { partnerRoutes, type PartnerRoute } from './partner-routes';
import { useScene } from '../testing/scene';

/**
 * The request log's canary (docs/request-log.md, "What is stored of a body"): a distinctive name,
 * an email, a phone number and a clinical phrase are put into every field a partner can send — the
 * route's known fields and unknown ones, path parameters, query strings, headers — on every partner
 * route (read from the router, so a new route is covered without a change here), through both doors
 * (REST and the console's tRPC), refused and accepted. Then every text and JSON column of every
 * table of the database is searched: the canary must be nowhere in plaintext, except in the few
 * columns where the service keeps, by contract, the partner's own identifiers of an accepted
 * request (BUSINESS_COLUMNS below) — and never in the request log.
 */
const { api, connection: fx, fixtures: f } = useScene({ rateLimit: false });

const token = randomBytes(4).toString('hex');
// A surname of its own: orders-personal-data.test.ts searches the same database for its patient, Quillfeather.
const CANARIES = {
  name: `Zebulon Marchwood ${token}`,
  email: `zebulon.marchwood.${token}@example.org`,
  phone: `+1 (555) 01${String(randomInt(0, 100_000)).padStart(5, '0')}`,
  clinical: `diabetic on metformin ${token}`,
};
const canaryValues = Object.values(CANARIES);
/** The canary, taking turns: each field gets one of the four. */
let turn = 0;
const nextCanary = () => canaryValues[turn++ % canaryValues.length];

/**
 * Where an accepted request's own identifiers are kept by design: an order's external ids and
 * collection location (returned to the partner; external_order_id is in its events), a registered
 * subject's reference, and an accepted create's Idempotency-Key with the response it replays (that
 * order, ids and all). The spec makes them opaque references the partner chooses; the log is not
 * where they are decided. A refused request leaves nothing in any of them.
 */
const BUSINESS_COLUMNS = new Set([
  'orders.external_order_id',
  'orders.external_subject_id',
  'orders.collection_location',
  'subjects.external_subject_id',
  'events.data',
  'events.body',
  'idempotency_keys.key',
  'idempotency_keys.response_data',
]);

type Def = { type: string; [key: string]: any };
const defOf = (schema: unknown): Def | undefined => (schema as { _zod?: { def?: Def } } | undefined)?._zod?.def;
function unwrap(schema: unknown): unknown {
  for (let i = 0; i < 32; i++) {
    const def = defOf(schema);
    if (!def) return undefined;
    if (['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional'].includes(def.type)) schema = def.innerType;
    else if (def.type === 'pipe') schema = defOf(def.in)?.type === 'transform' ? def.out : def.in;
    else if (def.type === 'lazy') schema = def.getter();
    else return schema;
  }
  return undefined;
}

/** A canary in every field of the schema, objects and arrays filled likewise, at every depth. */
function canaryFill(schema: unknown, depth = 0): unknown {
  const def = defOf(unwrap(schema));
  if (depth < 6 && def?.type === 'object') return Object.fromEntries(Object.keys(def.shape).map((key) => [key, canaryFill(def.shape[key], depth + 1)]));
  if (depth < 6 && def?.type === 'array') return [canaryFill(def.element, depth + 1)];
  return nextCanary();
}

/** Fields no schema has: named after the canaries, and the names a careless partner would pick. */
const unknownFields = () => ({ notes: CANARIES.clinical, name: CANARIES.name, email: CANARIES.email, phone: CANARIES.phone, [CANARIES.name]: CANARIES.clinical });

const headers = () => ({
  'idempotency-key': CANARIES.email,
  'x-canary': CANARIES.name,
  'user-agent': `canary ${CANARIES.clinical}`,
  referer: `https://example.org/${encodeURIComponent(CANARIES.phone)}`,
  'x-forwarded-for': CANARIES.phone,
  'x-request-id': CANARIES.email,
});

interface Ids {
  orderId: string;
  programId: string;
  resultId: string;
  externalSubjectId: string;
}

function pathOf(route: PartnerRoute, params: Record<string, string>): string {
  return route.template.replace(/\{(.+?)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? nextCanary()));
}

/** The route's input fields (the path's parameters aside), every one a canary; with `extra` unknown fields too. */
function canaryInput(route: PartnerRoute, extra: boolean): Record<string, unknown> {
  const { inputParser } = getInputOutputParsers(route.procedure as never);
  const filled = canaryFill(inputParser);
  const fields = filled && typeof filled === 'object' && !Array.isArray(filled) ? (filled as Record<string, unknown>) : {};
  for (const name of route.pathParams) delete fields[name];
  return extra ? { ...fields, ...unknownFields() } : fields;
}

const queryOf = (input: Record<string, unknown>) => {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(input)) params.append(name, typeof value === 'string' ? value : JSON.stringify(value));
  return params.size > 0 ? `?${params}` : '';
};

/** One request through REST: the input in the body (POST/PUT) or the query string (GET). */
function rest(route: PartnerRoute, key: string, params: Record<string, string>, input: Record<string, unknown>): Promise<TestResponse> {
  const path = pathOf(route, params);
  if (route.acceptsBody) return api.call(route.method, path, { key, json: input, headers: headers() });
  return api.call(route.method, path + queryOf(input), { key, headers: headers() });
}

/** The same through the console's door: the procedure over tRPC, its path parameters in its input. */
function consoleCall(route: PartnerRoute, key: string, params: Record<string, string>, input: Record<string, unknown>): Promise<TestResponse> {
  const whole = { ...Object.fromEntries(route.pathParams.map((name) => [name, params[name] ?? nextCanary()])), ...input };
  const all = { authorization: `Bearer ${key}`, ...headers() };
  if (route.type === 'query') return api.fetch('GET', `/api/trpc/${route.procedurePath}?input=${encodeURIComponent(JSON.stringify(whole))}&${encodeURIComponent(CANARIES.name)}=${encodeURIComponent(CANARIES.email)}`, { headers: all });
  return api.fetch('POST', `/api/trpc/${route.procedurePath}`, { json: whole, headers: all });
}

/** A client of its own per route (the log admits 100 requests a second per client), granted the demo sandbox program. */
async function tenant() {
  const { client_id: clientId } = await f.client((await f.demo()).laboratory_id);
  await f.grant(clientId, { id: demoId('program:wellness-sbx'), environment: 'sandbox' });
  return { clientId, key: await f.key(clientId, 'sandbox') };
}

/** Real identifiers, so a request gets past "not found" to its fields: an order with a released result. */
async function realIds(key: string): Promise<Ids> {
  const externalSubjectId = unique('canary-subject');
  expect((await api.call('PUT', `/v1/subjects/${externalSubjectId}`, { key })).status).toBe(200);
  const created = await api.call('POST', '/v1/orders', {
    key,
    json: { external_order_id: unique('canary'), program_id: demoId('program:wellness-sbx'), item_id: demoId('item:wellness-sbx:CBC'), external_subject_id: externalSubjectId, collection: 'in_person_draw' },
    headers: { 'idempotency-key': unique('idem') },
  });
  expect(created.status, created.text).toBe(201);
  const orderId = created.body.data.order_id as string;
  const simulated = await api.call('POST', `/v1/sandbox/orders/${orderId}/simulate`, { key, json: { scenario: 'report_available' } });
  expect(simulated.status, simulated.text).toBe(200);
  const results = await api.call('GET', `/v1/orders/${orderId}/results`, { key });
  return { orderId, programId: demoId('program:wellness-sbx'), resultId: results.body?.data?.current_result_id ?? orderId, externalSubjectId };
}

interface Hit {
  column: string;
  canary: string;
}

/** Every text, character and JSON column (arrays of them too) of every table of every schema but the system's, searched for the canary as sent, URL-encoded or form-encoded, in any case. */
async function findCanaries(): Promise<Hit[]> {
  const columns = await fx.sql<{ schema: string; table: string; column: string; root: string | null }[]>`
    select n.nspname as schema, c.relname as table, a.attname as column, pg_partition_root(c.oid)::regclass::text as root
    from pg_attribute a
    join pg_class c on c.oid = a.attrelid
    join pg_namespace n on n.oid = c.relnamespace
    where c.relkind = 'r' and a.attnum > 0 and not a.attisdropped
      and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'
      and (format_type(a.atttypid, null) in ('text', 'character varying', 'character', 'json', 'jsonb', 'name', 'xml')
        or format_type(a.atttypid, null) in ('text[]', 'character varying[]', 'jsonb[]', 'json[]'))`;
  const like = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const forms = canaryValues.flatMap((canary) => [canary, encodeURIComponent(canary), canary.replace(/ /g, '+'), encodeURIComponent(canary).replace(/%20/g, '+')].map((form) => ({ canary, pattern: like(form) })));
  const hits: Hit[] = [];
  for (const { schema, table, column, root } of columns) {
    const ident = `"${schema.replace(/"/g, '""')}"."${table.replace(/"/g, '""')}"`;
    const rows = await fx.sql.unsafe<{ pattern: string }[]>(
      `select p.pattern from unnest($1::text[]) as p(pattern) where exists (select 1 from ${ident} t where t."${column.replace(/"/g, '""')}"::text ilike p.pattern)`,
      [forms.map((form) => form.pattern)],
    );
    for (const { pattern } of rows) {
      // A partition is named after its day or month: its partitioned table's name is what matters.
      const name = (root ?? table).replace(/^public\./, '');
      hits.push({ column: `${name}.${column}`, canary: forms.find((form) => form.pattern === pattern)!.canary });
    }
  }
  return hits;
}

describe('the request log keeps no personal text a partner sent (canary)', () => {
  it('a name, an email, a phone number and a clinical phrase in every field of every route, both doors: found in no table but the business columns, and never in the log', { timeout: 600_000 }, async () => {
    const routes = partnerRoutes();
    expect(routes.length).toBeGreaterThan(20);
    const requestIds: string[] = [];
    const statuses: string[] = [];
    const note = (route: PartnerRoute, door: string, response: TestResponse) => {
      const id = response.headers.get('x-request-id');
      if (id && route.procedurePath !== 'sandbox.requestLog') requestIds.push(id);
      statuses.push(`${door} ${route.method} ${route.template} ${response.status}`);
    };

    for (const route of routes) {
      const { key } = await tenant();
      const ids = await realIds(key);
      const real = ids as unknown as Record<string, string>;
      for (const [door, call] of [['rest', rest], ['console', consoleCall]] as const) {
        // Canaries in the path's parameters and in every field, with unknown fields: refused.
        note(route, door, await call(route, key, {}, canaryInput(route, true)));
        // Real path parameters: every known field a canary (refused on a type, or accepted where text is).
        note(route, door, await call(route, key, real, canaryInput(route, false)));
        // Real path parameters, known and unknown fields.
        note(route, door, await call(route, key, real, canaryInput(route, true)));
      }
    }

    // Accepted requests whose every text field is a canary: the personal fields (sealed), the identifiers (kept by contract).
    const { key } = await tenant();
    const subject = await api.call('PUT', `/v1/subjects/${encodeURIComponent(CANARIES.email)}`, { key, headers: headers() });
    expect(subject.status, subject.text).toBe(200);
    const accepted = await api.call('POST', '/v1/orders', {
      key,
      headers: { ...headers(), 'idempotency-key': `${CANARIES.phone} ${token}` },
      json: {
        external_order_id: CANARIES.name,
        program_id: demoId('program:wellness-sbx'),
        item_id: demoId('item:wellness-sbx:CBC'),
        external_subject_id: CANARIES.email,
        collection: 'in_person_draw',
        collection_location: CANARIES.name,
        patient: { legal_first_name: 'Zebulon', legal_last_name: `Marchwood ${token}`, email: CANARIES.email, phone: CANARIES.phone, address_line1: CANARIES.clinical },
        ordering_provider: { name: CANARIES.name },
        clinical_notes: CANARIES.clinical,
      },
    });
    expect(accepted.status, accepted.text).toBe(201);
    const byConsole = await api.fetch('POST', '/api/trpc/orders.create', {
      headers: { authorization: `Bearer ${key}`, ...headers(), 'idempotency-key': `${CANARIES.clinical} 2` },
      json: { external_order_id: CANARIES.clinical, program_id: demoId('program:wellness-sbx'), item_id: demoId('item:wellness-sbx:CBC'), external_subject_id: CANARIES.email, collection: 'in_person_draw', clinical_notes: CANARIES.clinical },
    });
    expect(byConsole.status, byConsole.text).toBe(200);
    const serviceable = await api.call('POST', '/v1/serviceability', { key, headers: headers(), json: { program_id: demoId('program:wellness-sbx'), item_id: demoId('item:wellness-sbx:CBC'), region: CANARIES.name, collection: CANARIES.clinical } });
    expect(serviceable.status, serviceable.text).toBe(200);
    for (const response of [subject, accepted, serviceable, byConsole]) requestIds.push(response.headers.get('x-request-id')!);

    // Both outcomes were exercised: refusals and acceptances.
    expect(statuses.some((s) => / 4\d\d$/.test(s))).toBe(true);
    expect(statuses.some((s) => / 2\d\d$/.test(s))).toBe(true);

    // The writer flushes about a second after each response: wait for every row, never for a fixed time.
    const logged = async () => (await fx.db.select({ id: sandboxRequestLog.requestId }).from(sandboxRequestLog).where(inArray(sandboxRequestLog.requestId, requestIds))).length;
    await expect.poll(logged, { timeout: 60_000, interval: 250 }).toBe(new Set(requestIds).size);

    const hits = await findCanaries();
    expect(hits.filter((hit) => hit.column.startsWith('sandbox_request_log.'))).toEqual([]);
    const outside = hits.filter((hit) => !BUSINESS_COLUMNS.has(hit.column));
    expect(outside, JSON.stringify(outside)).toEqual([]);
    // The accepted order did keep its identifiers where the contract says (the search finds what is there).
    expect(hits.map((hit) => hit.column)).toEqual(expect.arrayContaining(['orders.external_order_id', 'subjects.external_subject_id']));
  });
});
