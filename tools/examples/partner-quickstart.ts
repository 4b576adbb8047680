/**
 * A partner's first integration, end to end, with a client generated from the OpenAPI document
 * (openapi-typescript types + openapi-fetch). Run it against a sandbox:
 *
 *   PARTNER_BASE_URL=http://127.0.0.1:3000/api/public/partner PARTNER_API_KEY=lop_test_… \
 *     npx tsx tools/examples/partner-quickstart.ts
 *
 * (or `--base-url … --key …`). `npm run quickstart:run` starts the service on a fresh database and
 * runs it. Optional endpoints (sandbox fixtures, scenarios and simulation) are used when the live
 * OpenAPI document lists them, so the example follows the API as it grows.
 */
import { randomUUID } from 'node:crypto';
import createClient from 'openapi-fetch';
// The partner CLI's generated types (npm run client:types): one copy for every typed client here.
// The .js extension: the import resolves (to partner-api.d.ts) under moduleResolution NodeNext as under Bundler.
import type { components, paths } from '../../apps/partner-cli/src/generated/partner-api.js';

type Schemas = components['schemas'];
type Order = Schemas['Order'];
type OrderBody = NonNullable<paths['/api/public/partner/v1/orders']['post']['requestBody']>['content']['application/json'];
type Envelope<T> = { data: T; request_id: string; cursor?: string | null };

const BASE_PATH = '/api/public/partner';
const OPENAPI_PATH = '/api/public/partner-openapi';

export interface QuickstartOptions {
  /** The spec's {base_url}, e.g. https://sandbox.lab.example/api/public/partner */
  baseUrl: string;
  apiKey: string;
  log?: (line: string) => void;
}

export interface QuickstartReport {
  orderId: string;
  replayed: boolean;
  usedFixture: boolean;
  scenario: string | null;
  eventTypes: string[];
  cursor: string;
  resultId: string | null;
  report: 'available' | 'report_not_modeled' | 'no_result';
  cancelled: boolean;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: any,
  ) {
    super(`${status} ${body?.error?.code ?? ''}: ${body?.error?.message ?? JSON.stringify(body)} (request ${body?.request_id ?? '?'})`);
  }
}

/** openapi-fetch answers `{ data, error, response }`; a failure becomes an exception with our error envelope. */
function must<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) throw new ApiError(result.response.status, result.error);
  return result.data;
}

export async function runQuickstart({ baseUrl, apiKey, log = console.log }: QuickstartOptions): Promise<QuickstartReport> {
  const base = baseUrl.replace(/\/+$/, '');
  if (!base.endsWith(BASE_PATH)) throw new Error(`the base URL must end in ${BASE_PATH} (the spec's {base_url}), got ${baseUrl}`);
  const origin = base.slice(0, -BASE_PATH.length);
  // Paths in the document carry the base path, so the client's base URL is the origin.
  const client = createClient<paths>({ baseUrl: origin, headers: { Authorization: `Bearer ${apiKey}` } });

  /** Untyped calls for endpoints that may not be in the generated types yet (checked against the live document first). */
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { Authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await response.json();
    if (!response.ok) throw new ApiError(response.status, json);
    return json as Envelope<any>;
  };
  const document = (await (await fetch(`${origin}${OPENAPI_PATH}`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const offers = (method: string, path: string) => Boolean(document.paths[`${BASE_PATH}${path}`]?.[method]);

  // 1. Credentials and environment.
  const health = must(await client.GET('/api/public/partner/v1/health')).data;
  log(`health: ${health.status}, environment ${health.environment}, version ${health.version}`);
  if (health.environment !== 'sandbox') throw new Error('the quickstart creates orders: use a sandbox key');

  // 2. What the laboratory offers.
  const lab = must(await client.GET('/api/public/partner/v1/lab')).data;
  log(`laboratory: ${lab.display_name} (certifications ${lab.certifications.state})`);
  const programs = must(await client.GET('/api/public/partner/v1/programs')).data.filter((p) => p.status === 'active');
  if (programs.length === 0) throw new Error('no active program is granted to this key');
  log(`programs: ${programs.map((p) => p.name).join('; ')}`);

  // 3. An order body: a sandbox fixture when the API offers them, else built from catalog and requirements.
  let order: OrderBody | null = null;
  let usedFixture = false;
  if (offers('get', '/v1/sandbox/order-fixtures')) {
    const fixtures = (await call('GET', '/v1/sandbox/order-fixtures')).data as Record<string, any>[];
    const fixture = fixtures.find((f) => Object.values(f).includes('minimal')) ?? fixtures[0];
    const template = ['request', 'body', 'template', 'order'].map((k) => fixture?.[k]).find((v) => v && typeof v === 'object') ?? fixture;
    if (template?.program_id) {
      order = { ...template, external_order_id: `quickstart-${randomUUID()}` } as OrderBody;
      usedFixture = true;
      log(`order: from the sandbox fixture for program ${order.program_id}`);
    }
  }
  if (!order) order = await orderFromRequirements();

  async function orderFromRequirements(): Promise<OrderBody> {
    for (const program of programs) {
      const params = { path: { programId: program.program_id } };
      const catalog = must(await client.GET('/api/public/partner/v1/programs/{programId}/catalog', { params })).data;
      for (const item of catalog) {
        const profile = must(await client.GET('/api/public/partner/v1/programs/{programId}/requirements', { params: { ...params, query: { item_id: item.item_id } } })).data;
        const needsMore =
          profile.provider.requirement !== 'not_required' || profile.subject.required_patient_fields.length > 0 || profile.aoe.questions.some((q) => q.required);
        if (needsMore || profile.collection.methods.length === 0) continue;
        log(`order: built for "${item.name}" in "${program.name}" from its requirements profile`);
        return {
          external_order_id: `quickstart-${randomUUID()}`,
          program_id: program.program_id,
          item_id: item.item_id,
          external_subject_id: 'quickstart-subject-0001',
          collection: profile.collection.methods[0],
          ...(profile.collection.regions[0] ? { region: profile.collection.regions[0] } : {}),
          ...(profile.billing.mode_required ? { billing_mode: profile.billing.accepted_modes[0] } : {}),
        };
      }
    }
    throw new Error('no catalog item can be ordered with a minimal order');
  }

  // 4. Serviceability, then the subject (an opaque reference only: no personal data).
  const serviceability = must(
    await client.POST('/api/public/partner/v1/serviceability', {
      body: { program_id: order.program_id, item_id: order.item_id, ...(order.region ? { region: order.region } : {}), collection: order.collection },
    }),
  ).data;
  log(`serviceable: ${serviceability.serviceable}${serviceability.reasons.length ? ` (${serviceability.reasons.join(', ')})` : ''}`);
  if (!serviceability.serviceable) throw new Error('the chosen test is not serviceable');
  must(await client.PUT('/api/public/partner/v1/subjects/{externalSubjectId}', { params: { path: { externalSubjectId: order.external_subject_id } } }));

  // 5. Create the order with an Idempotency-Key, then prove a retry is safe.
  const idempotencyKey = randomUUID();
  const create = () => client.POST('/api/public/partner/v1/orders', { params: { header: { 'Idempotency-Key': idempotencyKey } }, body: order! });
  const created: Order = must(await create()).data;
  const replay = await create();
  const replayed = replay.response.status === 201 && replay.response.headers.get('Idempotent-Replayed') === 'true' && must(replay).data.order_id === created.order_id;
  log(`order ${created.order_id}: ${created.lifecycle}/${created.lifecycle_detail}; replay with the same key returned the same order: ${replayed}`);
  if (!replayed) throw new Error('the idempotent replay did not return the original order');
  const conflicting = await client.POST('/api/public/partner/v1/orders', {
    params: { header: { 'Idempotency-Key': idempotencyKey } },
    body: { ...order, external_order_id: `${order.external_order_id}-changed` },
  });
  log(`same key, different body: ${conflicting.response.status} ${(conflicting.error as any)?.error?.details?.[0]?.issue ?? ''}`);

  // 6. A sandbox scenario, when the API offers simulation.
  let scenario: string | null = null;
  if (offers('post', '/v1/sandbox/orders/{orderId}/simulate') && offers('get', '/v1/sandbox/scenarios')) {
    const names = ((await call('GET', '/v1/sandbox/scenarios')).data as { scenario: string }[]).map((s) => s.scenario);
    scenario = ['report_available', 'happy_path'].find((n) => names.includes(n)) ?? names[0] ?? null;
    if (scenario) {
      const simulated = (await call('POST', `/v1/sandbox/orders/${created.order_id}/simulate`, { scenario })).data;
      log(`simulated ${scenario}: ${simulated.events_emitted} events`);
    }
  }

  // 7. Follow the event stream with a cursor (this is how to recover after any webhook gap).
  let cursor: string | undefined;
  const eventTypes: string[] = [];
  for (;;) {
    const page = must(await client.GET('/api/public/partner/v1/events', { params: { query: { ...(cursor ? { cursor } : {}), limit: 100 } } })).data;
    eventTypes.push(...page.events.filter((e) => e.data.order_id === created.order_id).map((e) => e.type));
    cursor = page.next_cursor;
    if (!page.has_more) break;
  }
  log(`events for the order: ${eventTypes.join(', ')} (saved cursor ${cursor})`);

  // 8. Results and their lineage; then the report, which is never fabricated.
  const orderPath = { path: { orderId: created.order_id } };
  const results = must(await client.GET('/api/public/partner/v1/orders/{orderId}/results', { params: orderPath })).data;
  let report: QuickstartReport['report'] = 'no_result';
  if (results.current_result_id) {
    const resultPath = { path: { orderId: created.order_id, resultId: results.current_result_id } };
    const result = must(await client.GET('/api/public/partner/v1/orders/{orderId}/results/{resultId}', { params: resultPath })).data;
    log(`result v${result.version} (${result.state}); lineage: ${results.version_lineage.map((v) => `v${v.version} ${v.state}${v.is_current ? ' (current)' : ''}`).join(' → ')}`);
    const availability = await client.GET('/api/public/partner/v1/orders/{orderId}/results/{resultId}/report', { params: resultPath });
    if (availability.data) {
      report = 'available';
      const path = availability.data.data.report.retrieval_path;
      const documentResponse = path ? await call('GET', path) : null;
      log(`report: available${documentResponse ? `, ${documentResponse.data.media_type ?? 'document'} retrieved` : ''}`);
    } else if ((availability.error as any)?.error?.code === 'report_not_modeled') {
      report = 'report_not_modeled';
      log('report: the laboratory supplied no report document (report_not_modeled)');
    } else {
      throw new ApiError(availability.response.status, availability.error);
    }
  } else {
    log(`results: pending (${results.pending_reason ?? 'nothing released yet'})`);
  }

  // 9. Cancel while it is still possible; after a scenario the order is usually too far along (409).
  const cancel = await client.POST('/api/public/partner/v1/orders/{orderId}/cancel', { params: orderPath });
  const cancelled = cancel.response.status === 200;
  log(`cancel: ${cancelled ? 'cancelled' : `${cancel.response.status} ${(cancel.error as any)?.error?.details?.[0]?.issue ?? (cancel.error as any)?.error?.code}`}`);
  if (!cancelled && !(cancel.response.status === 409 && scenario)) throw new ApiError(cancel.response.status, cancel.error);

  return { orderId: created.order_id, replayed, usedFixture, scenario, eventTypes, cursor: cursor!, resultId: results.current_result_id ?? null, report, cancelled };
}

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const baseUrl = argument('base-url') ?? process.env.PARTNER_BASE_URL;
  const apiKey = argument('key') ?? process.env.PARTNER_API_KEY;
  if (!baseUrl || !apiKey) {
    console.error('usage: partner-quickstart.ts --base-url <{origin}/api/public/partner> --key <sandbox API key> (or PARTNER_BASE_URL / PARTNER_API_KEY)');
    process.exit(2);
  }
  runQuickstart({ baseUrl, apiKey }).then(
    () => console.log('quickstart: done'),
    (error: unknown) => {
      console.error(`quickstart failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
