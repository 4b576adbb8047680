import { createHash } from 'node:crypto';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { ENVELOPE_TEST, FLOW, FLOW_VARIABLES, OTHER_FOLDER, SETUP_CHECK, statusTest, type FlowStep } from './flow';

type Json = Record<string, any>;

export const COLLECTION_NAME = 'Laboratory Ordering Partner API';
export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000/api/public/partner';

/** Options for openapi-to-postmanv2: requests grouped by tag, values from the document's examples. */
const CONVERTER_OPTIONS = {
  folderStrategy: 'Tags',
  requestParametersResolution: 'Example',
  exampleParametersResolution: 'Example',
  parametersResolution: 'Example',
  includeAuthInfoInExample: false,
  enableOptionalParameters: true,
} as const;

/** A seeded generator (mulberry32), so the example values the converter invents are the same on every run. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The converter fakes response examples with Math.random, and its faker keeps a reference to the
// Math.random it saw when loaded. A committed file must not change between two generations, so
// Math.random delegates to a generator that is seeded only while a conversion runs, and the
// converter is loaded after that delegate is in place.
const systemRandom = Math.random;
let activeRandom: () => number = systemRandom;
const delegatingRandom = () => activeRandom();

async function convert(document: Json): Promise<Json> {
  Math.random = delegatingRandom;
  const { default: converter } = await import('openapi-to-postmanv2');
  activeRandom = seededRandom(20240501);
  try {
    return await new Promise((resolve, reject) => {
      converter.convert({ type: 'json', data: structuredClone(document) }, CONVERTER_OPTIONS, (error: unknown, result: any) => {
        if (error) return reject(error);
        if (!result.result) return reject(new Error(`openapi-to-postmanv2: ${result.reason}`));
        resolve(result.output[0].data);
      });
    });
  } finally {
    activeRandom = systemRandom;
  }
}

/** A name-derived id, so regenerating the collection changes nothing unless the API changed. */
function stableId(...parts: string[]): string {
  const h = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16], 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const snake = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

/** `/api/public/partner/v1/programs/:programId` → `/v1/programs/{programId}` (the spec's way of writing a route). */
function routeOf(request: Json): string {
  const segments = (request.url.path as string[]).map((s) => (s.startsWith(':') ? `{${s.slice(1)}}` : s));
  const path = `/${segments.join('/')}`;
  return `${request.method} ${path.startsWith(PARTNER_BASE_PATH) ? path.slice(PARTNER_BASE_PATH.length) : path}`;
}

/** Points a converted URL at {{base_url}} with path parameters bound to the flow's variables. */
function rewriteUrl(url: Json, query?: Record<string, string | null>): Json {
  const base = PARTNER_BASE_PATH.split('/').filter(Boolean);
  const path = (url.path as string[]).slice(base.length).map((s) => (s.startsWith(':') ? `{{${snake(s.slice(1))}}}` : s));
  const params = ((url.query ?? []) as Json[]).map((param): Json => {
    if (!query || !(param.key in query)) return { ...param, disabled: true };
    const value = query[param.key];
    return value === null ? { ...param, disabled: true } : { ...param, value, disabled: false };
  });
  const enabled = params.filter((p) => !p.disabled).map((p) => `${p.key}=${p.value}`);
  return {
    raw: `{{base_url}}/${path.join('/')}${enabled.length > 0 ? `?${enabled.join('&')}` : ''}`,
    host: ['{{base_url}}'],
    path,
    ...(params.length > 0 ? { query: params } : {}),
  };
}

/** The example body with every field the flow tracks bound to its variable. */
function bindBody(body: Json | undefined, step: FlowStep | undefined): Json | undefined {
  if (!body || body.mode !== 'raw') return body;
  if (step?.rawBody !== undefined) return { ...body, raw: step.rawBody };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.raw);
  } catch {
    return body;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return body;
  const bound = Object.fromEntries(Object.entries(parsed).map(([key, value]) => [key, key in FLOW_VARIABLES ? `{{${key}}}` : value]));
  return { ...body, raw: JSON.stringify(bound, null, 2) };
}

function script(type: 'prerequest' | 'test', lines: string[], ...idParts: string[]): Json {
  return { listen: type, script: { id: stableId('script', type, ...idParts), type: 'text/javascript', exec: lines } };
}

function finishRequest(request: Json, step: FlowStep | undefined): Json {
  const { auth: _inheritsCollectionAuth, ...rest } = request;
  const header = ((rest.header ?? []) as Json[]).map((h) => (h.key.toLowerCase() === 'idempotency-key' ? { ...h, value: '{{idempotency_key}}' } : h));
  return { ...rest, header, url: rewriteUrl(rest.url, step?.query), ...(rest.body ? { body: bindBody(rest.body, step) } : {}) };
}

/** Path parameters the flow has no step for: skip the request until a variable holds a value. */
function unboundPathVariables(path: string[]): string[] {
  return path.filter((s) => s.startsWith('{{')).map((s) => s.slice(2, -2));
}

function buildItem(item: Json, step: FlowStep | undefined, documentedSuccess: string): Json {
  const key = step ? `${routeOf(item.request)}#${step.key ?? ''}` : routeOf(item.request);
  const request = finishRequest(item.request, step);
  const prerequest = step?.prerequest ?? unboundPathVariables(request.url.path).map((name) => `if (!pm.variables.get('${name}')) pm.execution.skipRequest();`);
  const test = [...statusTest(step?.expect ?? `[${documentedSuccess}]`), ...(step?.test ?? [])];
  const responses = ((item.response ?? []) as Json[]).map((response, index) => ({
    ...response,
    id: stableId('response', key, String(index)),
    originalRequest: response.originalRequest ? finishRequest(response.originalRequest, step) : undefined,
  }));
  return {
    id: stableId('item', key),
    name: step?.name ?? item.name,
    request,
    response: responses,
    event: [...(prerequest.length > 0 ? [script('prerequest', prerequest, key)] : []), script('test', test, key)],
    ...(item.protocolProfileBehavior ? { protocolProfileBehavior: item.protocolProfileBehavior } : {}),
  };
}

function requestsOf(items: Json[]): Json[] {
  return items.flatMap((item) => (item.item ? requestsOf(item.item) : [item]));
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** The first 2xx status each operation documents, by route. */
function documentedSuccessStatuses(document: Json): Map<string, string> {
  const statuses = new Map<string, string>();
  for (const [path, item] of Object.entries((document.paths ?? {}) as Record<string, Json>)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!HTTP_METHODS.includes(method)) continue;
      const success = Object.keys(operation.responses ?? {}).find((s) => s.startsWith('2')) ?? '200';
      statuses.set(`${method.toUpperCase()} ${path.startsWith(PARTNER_BASE_PATH) ? path.slice(PARTNER_BASE_PATH.length) : path}`, success);
    }
  }
  return statuses;
}

/**
 * The Postman collection (v2.1) for the OpenAPI document: converted by openapi-to-postmanv2,
 * then arranged as a run that works end to end against a freshly seeded sandbox.
 */
export async function buildPostmanCollection(document: Json): Promise<Json> {
  const converted = await convert(document);
  const byRoute = new Map(requestsOf(converted.item).map((item) => [routeOf(item.request), item]));
  const successes = documentedSuccessStatuses(document);

  const folders = new Map<string, Json[]>();
  const add = (folder: string, item: Json) => folders.set(folder, [...(folders.get(folder) ?? []), item]);
  const planned = new Set<string>();
  for (const step of FLOW) {
    const item = byRoute.get(step.route);
    if (!item) continue;
    planned.add(step.route);
    add(step.folder, buildItem(item, step, successes.get(step.route) ?? '200'));
  }
  for (const [route, item] of byRoute) {
    if (!planned.has(route)) add(OTHER_FOLDER, buildItem(item, undefined, successes.get(route) ?? '200'));
  }

  return {
    info: {
      _postman_id: stableId('collection', COLLECTION_NAME),
      name: COLLECTION_NAME,
      description: {
        content: [
          document.info?.description ?? '',
          '',
          'Generated from the OpenAPI document (`npm run postman`); do not edit by hand.',
          'Import it with `sandbox.environment.json`, set `api_key` (a sandbox key) and `base_url`, and run the whole collection: each step saves the ids the next ones need. Every create-order request gets a fresh `Idempotency-Key`; the replay after it reuses the key and gets the original order back.',
        ].join('\n'),
        type: 'text/markdown',
      },
      schema: 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json',
    },
    auth: { type: 'bearer', bearer: [{ key: 'token', value: '{{api_key}}', type: 'string' }] },
    event: [script('prerequest', SETUP_CHECK, 'collection'), script('test', ENVELOPE_TEST, 'collection')],
    variable: Object.entries(FLOW_VARIABLES).map(([key, value]) => ({ key, value, type: 'string' })),
    item: [...folders.entries()].map(([name, item]) => ({ id: stableId('folder', name), name, item })),
  };
}

/** The sandbox environment template: the three variables the spec names, values to fill in. */
export function buildSandboxEnvironment(): Json {
  return {
    id: stableId('environment', 'sandbox'),
    name: 'Laboratory Ordering Partner API — Sandbox',
    values: [
      { key: 'base_url', value: DEFAULT_BASE_URL, type: 'default', enabled: true },
      { key: 'api_key', value: '', type: 'secret', enabled: true },
      { key: 'idempotency_key', value: '', type: 'default', enabled: true },
    ],
    _postman_variable_scope: 'environment',
  };
}
