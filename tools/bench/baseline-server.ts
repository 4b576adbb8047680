/**
 * The benchmark's BASELINE: a bare node:http server with postgres.js, no framework, running the
 * same SQL statements as the partner API for three routes (read an order, create an order, read
 * the event stream) and answering the same envelope. The partner API's figures are reported as
 * ratios of this one, measured in the same run on the same machine, so machine load cancels out.
 *
 *   DATABASE_URL=… PORT=… node --import tsx tools/bench/baseline-server.ts
 *
 * Deliberately not reused from the domain: the point is what the layers (express, logging, tRPC,
 * trpc-to-openapi, Zod, drizzle) cost on top of the database work itself.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import postgres from 'postgres';

const BASE = '/api/public/partner';
const sql = postgres(process.env.DATABASE_URL!, { max: Number(process.env.PARTNER_DB_POOL_SIZE ?? 10), onnotice: () => undefined, connection: { application_name: 'bench-baseline' } });

interface Caller {
  id: string;
  client_id: string;
  laboratory_id: string;
  environment: string;
  scopes: string[];
  expired: boolean;
  revoked: boolean;
  client_status: string;
}

const send = (res: ServerResponse, status: number, body: unknown, requestId: string) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'x-request-id': requestId });
  res.end(text);
};
const fail = (res: ServerResponse, status: number, code: string, requestId: string) => send(res, status, { error: { code, message: code }, request_id: requestId }, requestId);

async function authenticate(authorization: string | undefined): Promise<Caller | null> {
  const key = /^Bearer (\S+)$/i.exec(authorization ?? '')?.[1];
  if (!key) return null;
  const [row] = await sql<Caller[]>`
    select k.id, k.client_id, k.laboratory_id, k.environment, k.scopes, c.status as client_status,
           k.revoked_at is not null as revoked,
           k.expires_at is not null and k.expires_at <= ${new Date().toISOString()}::timestamptz as expired
    from api_keys k join api_clients c on c.id = k.client_id
    where k.key_hash = ${createHash('sha256').update(key).digest('hex')}`;
  return row && !row.revoked && !row.expired && row.client_status === 'active' ? row : null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function orderJson(o: Record<string, any>, specimens: Record<string, any>[]) {
  return {
    order_id: o.id,
    external_order_id: o.external_order_id,
    program_id: o.program_id,
    item_id: o.item_id,
    external_subject_id: o.external_subject_id,
    environment: o.environment,
    lifecycle_detail: o.lifecycle_detail,
    requisition: { state: o.requisition_state, requisition_id: o.requisition_id, laboratory_reference: o.laboratory_reference, created_at: iso(o.requisition_created_at), document: { state: 'not_modeled' } },
    accession: { accession_number: o.accession_number, source_system: o.accession_source_system, accessioned_at: iso(o.accessioned_at), received_at: iso(o.received_at) },
    specimens: specimens.map((s) => ({
      specimen_id: s.id,
      specimen_code: s.specimen_code,
      specimen_type: s.specimen_type,
      status: s.status,
      accession_number: s.accession_number,
      rejection_reason: s.rejection_reason,
      collected_at: iso(s.collected_at),
      received_at: iso(s.received_at),
      recollection_of: s.recollection_of,
    })),
    transmission: { status: o.transmission_status, ack_status: o.ack_status, external_order_ref: o.external_order_ref, attempt_no: o.transmission_attempt_no, sent_at: iso(o.sent_at), acknowledged_at: iso(o.acknowledged_at) },
    created_at: o.created_at.toISOString(),
    updated_at: o.updated_at.toISOString(),
  };
}

type Tx = postgres.TransactionSql;

async function getOrder(caller: Caller, orderId: string) {
  const [order] = await sql`select * from orders where id = ${orderId} and client_id = ${caller.client_id} and environment = ${caller.environment} and laboratory_id = ${caller.laboratory_id}`;
  if (!order) return null;
  const specimens = await sql`select * from specimens where order_id in (${orderId}) order by created_at asc, id asc`;
  return orderJson(order, specimens);
}

async function createOrder(caller: Caller, idempotencyKey: string, body: Record<string, any>) {
  const requestHash = createHash('sha256').update(JSON.stringify(body)).digest('hex');
  const [claimed] = await sql`
    insert into idempotency_keys (client_id, environment, key, request_hash, state, locked_until)
    values (${caller.client_id}, ${caller.environment}, ${idempotencyKey}, ${requestHash}, 'in_flight', now() + make_interval(secs => 60))
    on conflict do nothing returning key`;
  if (!claimed) return { status: 409, data: null };
  return sql.begin(async (tx: Tx) => {
    await tx`select * from idempotency_keys where client_id = ${caller.client_id} and environment = ${caller.environment} and key = ${idempotencyKey} for update`;
    const [program] = await tx`
      select p.* from programs p join program_grants g on g.program_id = p.id and g.client_id = ${caller.client_id}
      where p.laboratory_id = ${caller.laboratory_id} and p.environment = ${caller.environment} and p.id = ${body.program_id}`;
    const [item] = await tx`select * from catalog_items where program_id = ${body.program_id} and id = ${body.item_id} and status = 'active'`;
    const [subject] = await tx`select external_subject_id from subjects where client_id = ${caller.client_id} and environment = ${caller.environment} and external_subject_id = ${body.external_subject_id}`;
    await tx`
      select * from requirement_profiles where program_id = ${body.program_id} and (item_id = ${body.item_id} or item_id is null) and (region = ${body.region ?? null} or region is null)
      order by (item_id is not null) desc, (region is not null) desc limit 1`;
    if (!program || !item || !subject) return { status: 422, data: null };
    const now = new Date();
    const [order] = await tx`
      insert into orders (laboratory_id, client_id, environment, external_order_id, program_id, item_id, external_subject_id, collection, region, synthetic, lifecycle_detail, created_at, updated_at)
      values (${caller.laboratory_id}, ${caller.client_id}, ${caller.environment}, ${body.external_order_id}, ${body.program_id}, ${body.item_id}, ${body.external_subject_id},
              ${body.collection}, ${body.region ?? null}, ${caller.environment === 'sandbox'}, 'received', ${now}, ${now})
      on conflict do nothing returning *`;
    if (!order) return { status: 409, data: null };
    const specimens = await tx`select * from specimens where order_id in (${order.id}) order by created_at asc, id asc`;
    const [{ last }] = await tx`
      insert into event_streams (client_id, environment, last_sequence) values (${caller.client_id}, ${caller.environment}, 1)
      on conflict (client_id, environment) do update set last_sequence = event_streams.last_sequence + 1 returning last_sequence as last`;
    const eventId = randomUUID();
    const data = {
      order_id: order.id,
      external_order_id: order.external_order_id,
      program_id: order.program_id,
      client_id: order.client_id,
      environment: order.environment,
      lifecycle: 'pending',
      next_action: 'wait_for_laboratory',
      links: { order: `/v1/orders/${order.id}` },
    };
    await tx`
      insert into events (id, client_id, environment, sequence, type, version, occurred_at, program_id, order_id, data)
      values (${eventId}, ${caller.client_id}, ${caller.environment}, ${Number(last)}, 'order.created', 1, ${now}, ${order.program_id}, ${order.id}, ${tx.json(data)})`;
    await tx`
      insert into webhook_deliveries (subscription_id, event_id, kind, state, next_attempt_at)
      select s.id, e.id, 'event', 'pending', now()
      from jsonb_to_recordset(${tx.json([{ id: eventId, type: 'order.created', sequence: Number(last) }])}::jsonb) as e(id uuid, type text, sequence bigint)
      join webhook_subscriptions s on e.type = any(s.event_types)
      where s.client_id = ${caller.client_id} and s.environment = ${caller.environment} and s.status = 'active'
      order by e.sequence, s.id returning id`;
    const resource = orderJson(order, specimens);
    await tx`
      update idempotency_keys set state = 'completed', response_status = 201, response_data = ${tx.json(resource)}
      where client_id = ${caller.client_id} and environment = ${caller.environment} and key = ${idempotencyKey}`;
    return { status: 201, data: resource };
  });
}

const encodeCursor = (sequence: number) => Buffer.from(`seq:${sequence}`, 'utf8').toString('base64url');

async function readEvents(caller: Caller, cursor: string | null, limit: number) {
  const after = cursor ? Number(/^seq:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'))?.[1] ?? 0) : 0;
  const rows = await sql`
    select * from events where client_id = ${caller.client_id} and environment = ${caller.environment} and sequence > ${after}
    order by sequence asc limit ${limit + 1}`;
  const page = rows.slice(0, limit).map((row) => ({
    event_id: row.id,
    type: row.type,
    version: row.version,
    occurred_at: row.occurred_at.toISOString(),
    environment: row.environment,
    ...(row.program_id ? { program_id: row.program_id } : {}),
    sequence: Number(row.sequence),
    data: row.data,
  }));
  const last = page.length > 0 ? page[page.length - 1].sequence : after;
  return { events: page, next_cursor: encodeCursor(last), has_more: rows.length > limit };
}

const rateLimitWindow = 60;

async function handle(req: IncomingMessage, res: ServerResponse, body: string) {
  const requestId = `req_${randomBytes(12).toString('hex')}`;
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname === '/livez') return send(res, 200, { status: 'ok' }, requestId);
  const path = url.pathname.startsWith(BASE) ? url.pathname.slice(BASE.length) : '';
  if (req.method === 'POST' && path === '/v1/orders') {
    // The API's per-key rate limit is a statement before anything else; the baseline pays for it too.
    await sql`
      insert into rate_limit_counters (subject, window_start, count)
      values (${`baseline:${createHash('sha256').update(req.headers.authorization ?? '').digest('hex')}`}, to_timestamp(floor(extract(epoch from now()) / ${rateLimitWindow}) * ${rateLimitWindow}), 1)
      on conflict (subject, window_start) do update set count = rate_limit_counters.count + 1
      returning count, extract(epoch from window_start)::float8 as window_epoch`;
  }
  const caller = await authenticate(req.headers.authorization);
  if (!caller) return fail(res, 401, 'unauthorized', requestId);
  const orderMatch = /^\/v1\/orders\/([0-9a-f-]{36})$/.exec(path);
  if (req.method === 'GET' && orderMatch) {
    const order = await getOrder(caller, orderMatch[1]);
    return order ? send(res, 200, { data: order, request_id: requestId }, requestId) : fail(res, 404, 'not_found', requestId);
  }
  if (req.method === 'POST' && path === '/v1/orders') {
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string') return fail(res, 400, 'invalid_request', requestId);
    const outcome = await createOrder(caller, key, JSON.parse(body));
    return outcome.data ? send(res, outcome.status, { data: outcome.data, request_id: requestId }, requestId) : fail(res, outcome.status, 'conflict', requestId);
  }
  if (req.method === 'GET' && path === '/v1/events') {
    const page = await readEvents(caller, url.searchParams.get('cursor'), Number(url.searchParams.get('limit') ?? 100));
    return send(res, 200, { data: page, request_id: requestId, cursor: page.next_cursor }, requestId);
  }
  return fail(res, 404, 'not_found', requestId);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    handle(req, res, Buffer.concat(chunks).toString('utf8')).catch((error: unknown) => {
      console.error(error);
      if (!res.headersSent) fail(res, 500, 'internal_error', 'req_error');
    });
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(JSON.stringify({ msg: 'baseline listening', port: typeof address === 'object' && address ? address.port : null }));
});
const stop = () => server.close(() => void sql.end({ timeout: 2 }).then(() => process.exit(0)));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
