import type { ErrorCode } from '@lop/contract';
import { ERROR_CODES, type ErrorDetail } from '../http/errors';
import { checkEnumDocumentation, enumDocumentation } from '../documents/enum-descriptions';

/**
 * Tag descriptions, in the order a partner meets them. A tag used by an operation but missing
 * here is still listed (without a description, which the lint reports as a warning).
 */
export const TAGS: { name: string; description: string }[] = [
  { name: 'Health', description: 'Check that a key works and which environment it belongs to.' },
  { name: 'Laboratory', description: "The laboratory's self-declared identity and capabilities." },
  { name: 'Programs', description: "Programs granted to the key's API client in the key's environment." },
  { name: 'Catalog', description: "Each program's orderable tests and the requirements an order must meet." },
  { name: 'Serviceability', description: 'Where and how a test can be collected: locations and a fulfilment check.' },
  { name: 'Subjects', description: 'Register your opaque subject references before ordering. No personal data.' },
  { name: 'Orders', description: 'Create (idempotently), read and cancel orders, and read their exceptions.' },
  { name: 'Sandbox', description: 'Sandbox keys only: synthetic order fixtures, scenarios, and simulation of an order through a scenario.' },
  { name: 'Results', description: 'Released result versions, their lineage, and report availability.' },
  { name: 'Events', description: 'The ordered event stream for reconciliation; webhook deliveries carry the same event objects.' },
];

const REQUEST_ID_EXAMPLE = 'req_4f9c1d2e8a7b6c5d4e3f2a1b';

/** The rate limit's headers (IETF draft 6, as express-rate-limit sends them). */
const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': { description: 'The limit and its window in seconds, e.g. `120;w=60`.', schema: { type: 'string', example: '120;w=60' } },
  'RateLimit-Limit': { description: 'Requests allowed per window for this API client and environment (all its keys together).', schema: { type: 'integer', minimum: 0, example: 120 } },
  'RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer', minimum: 0, example: 119 } },
  'RateLimit-Reset': { description: 'Seconds until the current window ends.', schema: { type: 'integer', minimum: 0, example: 42 } },
};

/** Details shown in the example of each error code, so a reader sees what to branch on. */
const EXAMPLE_DETAILS: Partial<Record<ErrorCode, ErrorDetail[]>> = {
  invalid_request: [{ field: 'external_order_id', issue: 'too_long', message: 'At most 190 characters.' }],
  conflict: [{ issue: 'idempotency_key_reused' }],
  not_orderable: [{ field: 'external_subject_id', issue: 'subject_not_registered' }],
};

function errorExample(code: ErrorCode) {
  const details = EXAMPLE_DETAILS[code];
  return { error: { code, message: ERROR_CODES[code].description, ...(details ? { details } : {}) }, request_id: REQUEST_ID_EXAMPLE };
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

type Json = Record<string, any>;

function operationsOf(document: Json): Json[] {
  return Object.values((document.paths ?? {}) as Record<string, Json>).flatMap((item) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([, operation]) => operation as Json),
  );
}

/** The body of an error response for `codes` (all of one status): our envelope, one example per code. */
export function errorResponseObject(codes: ErrorCode[]) {
  const status = ERROR_CODES[codes[0]].status;
  return {
    description: codes.map((code) => `\`${code}\`: ${ERROR_CODES[code].description}`).join(' '),
    headers: {
      'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
      ...(status === 429 || status === 503 ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {}),
      ...(status === 401 ? { 'WWW-Authenticate': { $ref: '#/components/headers/WWW-Authenticate' } } : {}),
    },
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/ErrorEnvelope' },
        examples: Object.fromEntries(codes.map((code) => [code, { summary: code, value: errorExample(code) }])),
      },
    },
  };
}

/**
 * Finishing touches that make the document useful to people and generators alike: top-level
 * tags with descriptions, request examples lifted from the input schemas, the X-Request-Id
 * header on every response, documented enumerations, and no components left unused.
 */
export function polishDocument(document: Json): void {
  const operations = operationsOf(document);

  const used = [...new Set(operations.flatMap((operation) => (operation.tags ?? []) as string[]))];
  document.tags = [
    ...TAGS.filter((tag) => used.includes(tag.name)),
    ...used.filter((name) => !TAGS.some((tag) => tag.name === name)).map((name) => ({ name })),
  ];

  document.components ??= {};
  document.components.headers = {
    ...document.components.headers,
    'X-Request-Id': { description: 'Identifier of this request, equal to the body\u2019s `request_id`; quote it when asking for help.', schema: { type: 'string', example: REQUEST_ID_EXAMPLE } },
    'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0, example: 30 } },
    'WWW-Authenticate': { description: 'The authentication scheme to use (RFC 7235).', schema: { type: 'string', example: 'Bearer realm="partner-api"' } },
    'Idempotent-Replayed': {
      description: 'Present, with the value `true`, when this is the stored response of an earlier request with the same Idempotency-Key and body.',
      schema: { type: 'string', enum: ['true'] },
    },
    ...RATE_LIMIT_HEADERS,
  };

  for (const operation of operations) {
    // A request example (from the input schema's `.meta({ examples })`) on the media type, where
    // renderers, the Postman converter and the lint's example validation all look for it.
    const media = operation.requestBody?.content?.['application/json'];
    if (media && media.example === undefined && media.examples === undefined && Array.isArray(media.schema?.examples) && media.schema.examples.length > 0) {
      media.example = media.schema.examples[0];
      delete media.schema.examples;
    }
    // Operations that spend a rate budget carry the RateLimit-* headers on their
    // success and 429 responses; an operation taking an Idempotency-Key may answer with a replay.
    const responses = (operation.responses ?? {}) as Record<string, Json>;
    const rateLimited = operation['x-spends-rate-budget'] === true;
    delete operation['x-spends-rate-budget'];
    const idempotent = ((operation.parameters ?? []) as Json[]).some((p) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key');
    const rateLimitRefs = rateLimited ? Object.fromEntries(Object.keys(RATE_LIMIT_HEADERS).map((name) => [name, { $ref: `#/components/headers/${name}` }])) : {};
    for (const [status, response] of Object.entries(responses)) {
      if (!response || response.$ref) continue;
      if (Number(status) >= 400) {
        if (Number(status) === 429) response.headers = { ...response.headers, ...rateLimitRefs };
        // idempotency_key_in_flight: the wait for another request with the key ran out while it still runs.
        if (Number(status) === 409 && idempotent) response.headers = { ...response.headers, 'Retry-After': { $ref: '#/components/headers/Retry-After' } };
        continue;
      }
      response.headers = {
        'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
        ...(idempotent ? { 'Idempotent-Replayed': { $ref: '#/components/headers/Idempotent-Replayed' } } : {}),
        ...rateLimitRefs,
        ...response.headers,
      };
    }
  }

  for (const [name, schema] of Object.entries((document.components.schemas ?? {}) as Record<string, Json>)) {
    if (!Array.isArray(schema.enum)) continue;
    const documented = enumDocumentation(name);
    if (documented) {
      // An empty or missing description would otherwise be published as "" and an empty docs cell.
      checkEnumDocumentation(name, schema.enum, documented);
      const values: Record<string, string> = documented.values;
      schema.description = documented.description;
      schema['x-enumDescriptions'] = Object.fromEntries(schema.enum.map((value: string) => [value, values[value]]));
    } else {
      // Without documentation the docs table would publish a column of empty meanings.
      throw new Error(`Enumeration ${name} is published but not documented: describe it and each of its values in libs/domain/src/documents/enum-descriptions.ts.`);
    }
  }

  removeUnusedSchemas(document);
}

/** trpc-to-openapi adds its own error schemas (`error.*`); ours replace them, so they would only confuse. */
function removeUnusedSchemas(document: Json): void {
  const schemas = (document.components?.schemas ?? {}) as Record<string, unknown>;
  for (;;) {
    const text = JSON.stringify({ ...document, components: { ...document.components, schemas: undefined } }) + JSON.stringify(schemas);
    const unused = Object.keys(schemas).filter((name) => name.startsWith('error.') && !text.includes(`"#/components/schemas/${name}"`));
    if (unused.length === 0) return;
    for (const name of unused) delete schemas[name];
  }
}
