import type { z } from 'zod';
import { ERROR_CODES } from '../http/errors';
import { REDACTED_FIELDS, redactValue } from '../security/redaction';

/**
 * What of a body the sandbox request log keeps (docs/request-log.md, "What is stored of a body"):
 * an allow-list, so a field nobody thought about is never kept.
 *
 * A value is kept only where the route's own Zod schema gives it a type that cannot carry a
 * partner's text — an enum or literal, a boolean, a number, a UUID, an ISO date-time — and the
 * value actually is valid for it (a refused request's `collection: "Jane Doe"` is not an enum
 * value, so it is not kept). Everything else is kept only as its type and size, the REDACTION
 * shape below: free text, the partner's own identifiers (external_order_id, external_subject_id,
 * collection_location, Idempotency-Key …), unknown fields (their names too: a field's name is
 * partner text as much as its value), and the sealed personal fields of redaction.ts, whole.
 * Strings the service itself wrote are kept only where the table names them (`keep`); a route's
 * response can be kept as shape only (`response: 'shape'`: results are clinical).
 *
 * Which routes, and their overrides, is one table, routers/request-log-bodies.ts (it knows the
 * procedures, this folder sits below them), handed to the writer. A route not in it keeps no value
 * of either body (fail closed); its test checks every partner route is listed.
 */

/** A value not kept: its JSON type and size. `length`: characters of a string, items of an array, fields of an object. */
export type Redacted =
  | { $redacted: 'string'; length: number }
  | { $redacted: 'array'; length: number }
  | { $redacted: 'object'; length: number }
  | { $redacted: 'number' | 'boolean' };

/** Where an object's unknown fields go: their values' shapes, in order; their names are not kept. */
export const UNKNOWN_FIELDS = '$unknown_fields';

export function redactedShape(value: unknown): Redacted | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return { $redacted: 'string', length: [...value].length };
  if (Array.isArray(value)) return { $redacted: 'array', length: value.length };
  if (typeof value === 'object') return { $redacted: 'object', length: Object.keys(value).length };
  return { $redacted: typeof value === 'number' ? 'number' : 'boolean' };
}

/** What the log keeps of one route's bodies: its own schemas, and the explicit overrides of routers/request-log-bodies.ts. */
export interface RouteBodies {
  input: z.ZodType;
  output: z.ZodType;
  /**
   * Response paths (dotted, `[]` for an array's items) whose string values the service itself
   * wrote and that say nothing of a person: kept although their schema type is a plain string.
   */
  keep?: readonly string[];
  /** Response paths never kept, though their type could be (a boolean that says something clinical). */
  redact?: readonly string[];
  /** `shape`: the successful response is kept as its shape only, every value but the service's ids redacted (clinical content). */
  response?: 'shape';
}

/** Every response's envelope: the service's own request id and cursor. */
const ENVELOPE_KEEP = ['request_id', 'cursor'];

const sealed: ReadonlySet<string> = new Set(REDACTED_FIELDS);
const SAFE_STRING_FORMATS = new Set(['uuid', 'guid', 'datetime']);
/** An error's `details[].issue` and `error.code` are the service's snake_case names (errors.md). */
const ISSUE_NAME = /^[a-z][a-z0-9_]{0,63}$/;
/** Header names an error may name in `details[].field` (the route reads them; a header's value is never kept). */
const HEADER_FIELDS = new Set(['Authorization', 'Idempotency-Key', 'Accept', 'Content-Type']);

type Def = { type: string; [key: string]: any };
const defOf = (schema: unknown): Def | undefined => (schema as { _zod?: { def?: Def } } | undefined)?._zod?.def;

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional', 'success']);
const unwrapped = new WeakMap<object, unknown>();

/** The schema under wrappers that do not change what a value may be (remembered per schema: a page of events asks it a thousand times). */
function unwrap(schema: unknown): unknown {
  if (!schema || typeof schema !== 'object') return undefined;
  if (unwrapped.has(schema)) return unwrapped.get(schema);
  let inner: unknown = schema;
  for (let i = 0; i < 32 && inner !== undefined; i++) {
    const def = defOf(inner);
    if (!def) inner = undefined;
    else if (WRAPPERS.has(def.type)) inner = def.innerType;
    else if (def.type === 'pipe') inner = defOf(def.in)?.type === 'transform' ? def.out : def.in;
    else if (def.type === 'lazy') inner = def.getter();
    else break;
  }
  unwrapped.set(schema, inner);
  return inner;
}

/**
 * True when `value` is valid for `schema` and the schema's type cannot hold a partner's text.
 * Checked without a parse where Zod states the rule (its enum values, its format's pattern): a
 * parse per value cost a page of events milliseconds of the API process's time.
 */
function safeLeaf(schema: unknown, value: unknown): boolean {
  const zod = (schema as { _zod?: { def?: Def; values?: ReadonlySet<unknown> } } | undefined)?._zod;
  const def = zod?.def;
  if (!def) return false;
  switch (def.type) {
    case 'enum':
    case 'literal':
      return (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') && zod.values !== undefined && zod.values.has(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'number': {
      // Within the field's bounds too: a phone number sent as a number where a count goes is not kept.
      const { minValue, maxValue } = schema as { minValue?: number | null; maxValue?: number | null };
      const integer = typeof def.format === 'string' && /int/.test(def.format);
      return typeof value === 'number' && Number.isFinite(value) && value >= (minValue ?? -Infinity) && value <= (maxValue ?? Infinity) && (!integer || Number.isInteger(value));
    }
    case 'string':
      return typeof value === 'string' && SAFE_STRING_FORMATS.has(def.format) && def.pattern instanceof RegExp && def.pattern.test(value);
    default:
      return false;
  }
}

const isServiceId = (schema: unknown) => {
  const def = defOf(schema);
  return def?.type === 'string' && (def.format === 'uuid' || def.format === 'guid');
};

/** `a.b[].c` for the value at a path; `*` stands for any key of a record. */
const joinPath = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);

interface Walk {
  keep: ReadonlySet<string>;
  redact: ReadonlySet<string>;
  /** Every value but the service's ids redacted, the known fields' names kept (a response kept as shape only). */
  shapeOnly: boolean;
}

function filterValue(value: unknown, schema: unknown, path: string, walk: Walk): unknown {
  if (value === null || value === undefined) return null;
  if (walk.redact.has(path)) return redactedShape(value);
  if (walk.keep.has(path) && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')) return value;
  const inner = unwrap(schema);
  const def = defOf(inner);
  if (!def) return redactedShape(value);
  switch (def.type) {
    case 'object': {
      if (typeof value !== 'object' || Array.isArray(value)) return redactedShape(value);
      const shape = def.shape as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      const unknown: unknown[] = [];
      for (const [field, fieldValue] of Object.entries(value)) {
        if (!Object.hasOwn(shape, field)) unknown.push(redactedShape(fieldValue));
        else if (sealed.has(field)) out[field] = redactedShape(fieldValue);
        else out[field] = filterValue(fieldValue, shape[field], joinPath(path, field), walk);
      }
      if (unknown.length > 0) out[UNKNOWN_FIELDS] = unknown;
      return out;
    }
    case 'array':
      return Array.isArray(value) ? value.map((item) => filterValue(item, def.element, `${path}[]`, walk)) : redactedShape(value);
    case 'record': {
      // A record's keys are data, not names of fields: kept only where `keep` names its values.
      if (typeof value !== 'object' || Array.isArray(value) || !walk.keep.has(`${path}.*`)) return redactedShape(value);
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) {
        if (!ISSUE_NAME.test(key)) return redactedShape(value);
        out[key] = typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean' ? item : redactedShape(item);
      }
      return out;
    }
    case 'union': {
      // The option the value is valid for (a discriminated union's member); none: not kept.
      const option = (def.options as z.ZodType[]).find((candidate) => candidate.safeParse(value).success);
      return option ? filterValue(value, option, path, walk) : redactedShape(value);
    }
    default:
      // Shape only still keeps the service's ids: they say which order an entry is about, so a
      // withdrawn program's entries can be withheld (request-log.ts), and they are nobody's text.
      return safeLeaf(inner, value) && (!walk.shapeOnly || isServiceId(inner)) ? value : redactedShape(value);
  }
}

/** True when `field` (dotted, as an error's `details[].field` spells it) names a field of `schema`. */
function namesField(schema: unknown, field: string): boolean {
  if (HEADER_FIELDS.has(field)) return true;
  let at = schema;
  for (const segment of field.split('.')) {
    const def = defOf(unwrap(at));
    if (def?.type === 'object' && Object.hasOwn(def.shape, segment)) at = def.shape[segment];
    else if (def?.type === 'array' && /^(0|[1-9][0-9]{0,5})$/.test(segment)) at = def.element;
    else return false;
  }
  return true;
}

/** Strings a partner sent, for finding them repeated in an error's sentence. */
export function sentStrings(...values: unknown[]): Set<string> {
  const found = new Set<string>();
  const visit = (value: unknown, depth: number) => {
    if (depth > 32) return;
    if (typeof value === 'string') found.add(value);
    else if (typeof value === 'number') found.add(String(value));
    else if (Array.isArray(value)) for (const item of value) visit(item, depth + 1);
    else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        found.add(key);
        visit(item, depth + 1);
      }
    }
  };
  for (const value of values) visit(value, 0);
  return found;
}

/** Shorter than this, a sent string is not looked for in a sentence: "a", "to" would blank the API's own words. */
const ECHO_MIN_LENGTH = 3;
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** An error's sentence with every string the partner sent (as sent, trimmed, any case) blanked out. */
function withoutEchoes(message: unknown, sent: ReadonlySet<string>): unknown {
  if (typeof message !== 'string') return redactedShape(message);
  const echoes = [...sent]
    .flatMap((text) => [text, text.trim()])
    .filter((text) => text.length >= ECHO_MIN_LENGTH && message.toLowerCase().includes(text.toLowerCase()))
    .sort((a, b) => b.length - a.length);
  // redactValue: a key or signing secret in a sentence, and characters jsonb refuses.
  if (echoes.length === 0) return redactValue(message);
  return redactValue(message.replace(new RegExp(echoes.map(escapeRegExp).join('|'), 'gi'), '[redacted]'));
}

/**
 * The error envelope (errors.md) as stored: the code and issue names are the service's; a
 * `details[].field` is kept only when it names a field of the route's input (an unknown field's
 * name is the partner's text); sentences are the service's, but some repeat what was sent
 * (a value, a header), so anything sent is blanked in them.
 */
function storedError(body: Record<string, any>, input: unknown, sentNow: () => ReadonlySet<string>): unknown {
  const error = body.error;
  const sent = sentNow();
  if (!error || typeof error !== 'object' || Array.isArray(error)) return redactedShape(body);
  const out: Record<string, unknown> = {
    code: typeof error.code === 'string' && Object.hasOwn(ERROR_CODES, error.code) ? error.code : redactedShape(error.code),
    message: withoutEchoes(error.message, sent),
  };
  if (Array.isArray(error.details)) {
    out.details = error.details.map((detail: unknown) => {
      if (!detail || typeof detail !== 'object' || Array.isArray(detail)) return redactedShape(detail);
      const { field, issue, message } = detail as Record<string, unknown>;
      const kept: Record<string, unknown> = {};
      if (field !== undefined) kept.field = typeof field === 'string' && input !== undefined && namesField(input, field) ? field : redactedShape(field);
      kept.issue = typeof issue === 'string' && ISSUE_NAME.test(issue) ? issue : redactedShape(issue);
      if (message !== undefined) kept.message = withoutEchoes(message, sent);
      return kept;
    });
  } else if (error.details !== undefined) out.details = redactedShape(error.details);
  const envelope: Record<string, unknown> = { error: out };
  if ('request_id' in body) envelope.request_id = typeof body.request_id === 'string' && /^[A-Za-z0-9_-]{1,80}$/.test(body.request_id) ? body.request_id : redactedShape(body.request_id);
  return envelope;
}

export interface BodiesToStore {
  /** `METHOD /template`, as the log's `method` and `route` columns hold them. */
  method: string;
  route: string;
  status: number;
  /** The JSON body as the REST door carries it (undefined when none). */
  requestBody: unknown;
  /** The partner's JSON answer (the REST envelope), or undefined. */
  responseBody: unknown;
  /** Everything the partner sent that an error sentence might repeat (the body, the URL, the console's whole input); asked only for an error. */
  sent: () => ReadonlySet<string>;
}

const NOTHING: ReadonlySet<string> = new Set();
const requestWalk: Walk = { keep: NOTHING, redact: NOTHING, shapeOnly: false };
const responseWalks = new Map<string, Walk>();
function responseWalk(route: string, bodies: RouteBodies): Walk {
  let walk = responseWalks.get(route);
  if (!walk) {
    walk = { keep: new Set([...ENVELOPE_KEEP, ...(bodies.keep ?? [])]), redact: new Set(bodies.redact), shapeOnly: bodies.response === 'shape' };
    responseWalks.set(route, walk);
  }
  return walk;
}

/** Each partner route's RouteBodies, by `METHOD /template`. */
export type RequestLogBodies = ReadonlyMap<string, RouteBodies>;
export const NO_BODIES: RequestLogBodies = new Map();

/** The request and response bodies as the log keeps them (see the top of this file); a route `routes` lacks keeps no value. */
export function allowListedBodies(routes: RequestLogBodies, { method, route, status, requestBody, responseBody, sent }: BodiesToStore): { request: unknown; response: unknown } {
  const key = `${method} ${route}`;
  const bodies = routes.get(key);
  if (!bodies) return { request: requestBody === undefined ? undefined : redactedShape(requestBody), response: responseBody === undefined ? undefined : redactedShape(responseBody) };
  const request = requestBody === undefined ? undefined : filterValue(requestBody, bodies.input, '', requestWalk);
  let response: unknown;
  if (responseBody === undefined) response = undefined;
  else if (status >= 400 && responseBody && typeof responseBody === 'object' && !Array.isArray(responseBody)) response = storedError(responseBody as Record<string, any>, bodies.input, sent);
  else if (status >= 400) response = redactedShape(responseBody);
  else response = filterValue(responseBody, bodies.output, '', responseWalk(key, bodies));
  return { request, response };
}
