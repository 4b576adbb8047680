import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ErrorCode, PARTNER_BASE_PATH } from '@lop/contract';
import { forEachOpenApiProcedure } from 'trpc-to-openapi';
import type { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, ERROR_CODES, partnerRouter, PROJECT_ROOT, type ProcedureMeta } from '@lop/domain';

const document = buildOpenApiDocument() as Record<string, any>;
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const operations = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => HTTP_METHODS.includes(method))
    .map(([method, operation]) => ({ route: `${method.toUpperCase()} ${path}`, path, method, operation })),
);

/** Each procedure's input schema, by documented route. */
function inputsByRoute(): Map<string, z.ZodType> {
  const inputs = new Map<string, z.ZodType>();
  forEachOpenApiProcedure(partnerRouter._def.procedures, ({ meta, procedure }) => {
    const m = meta as ProcedureMeta;
    inputs.set(`${m.openapi!.method} ${PARTNER_BASE_PATH}${m.openapi!.path}`, (procedure as any)._def.inputs[0]);
  });
  return inputs;
}

describe('the OpenAPI document is complete enough for people and generators', () => {
  it('every operation has a unique operationId, a summary, a description and tags', () => {
    const ids = operations.map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { route, operation } of operations) {
      expect(operation.operationId, route).toMatch(/^[A-Za-z0-9-]+$/);
      expect(operation.summary, route).toEqual(expect.any(String));
      expect(operation.description?.length, route).toBeGreaterThan(20);
      expect(operation.tags?.length, route).toBeGreaterThan(0);
    }
  });

  it('every tag an operation uses is listed at the top level with a description', () => {
    // Webhook deliveries (OpenAPI 3.1 `webhooks`) are operations too, under their own tag.
    const webhookOperations = Object.values((document.webhooks ?? {}) as Record<string, Record<string, { tags?: string[] }>>).flatMap((item) => Object.values(item));
    const used = new Set([...operations.flatMap(({ operation }) => operation.tags as string[]), ...webhookOperations.flatMap((operation) => operation.tags ?? [])]);
    const listed = new Map((document.tags as { name: string; description?: string }[]).map((t) => [t.name, t.description]));
    for (const tag of used) expect(listed.get(tag), tag).toEqual(expect.any(String));
    expect([...listed.keys()].every((name) => used.has(name))).toBe(true);
  });

  it('every request body has an example that the procedure itself accepts', () => {
    const inputs = inputsByRoute();
    let bodies = 0;
    for (const { route, path, operation } of operations) {
      const media = operation.requestBody?.content?.['application/json'];
      if (!media) continue;
      bodies++;
      expect(media.example, `${route} has no request example`).toBeDefined();
      const pathParams = Object.fromEntries([...path.matchAll(/\{(.+?)\}/g)].map((m) => [m[1], '00000000-0000-4000-8000-000000000009']));
      const parsed = inputs.get(route)!.safeParse({ ...media.example, ...pathParams });
      expect(parsed.success, `${route}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
    }
    expect(bodies).toBeGreaterThanOrEqual(2);
  });

  it('every error response is the ErrorEnvelope, with one example per code, each code at its own status', () => {
    for (const { route, operation } of operations) {
      const errors = Object.entries(operation.responses as Record<string, any>).filter(([status]) => Number(status) >= 400);
      expect(errors.map(([s]) => s), route).toEqual(expect.arrayContaining(['400', '401', '500', '503']));
      for (const [status, response] of errors) {
        const media = response.content['application/json'];
        expect(media.schema).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
        for (const [code, example] of Object.entries(media.examples as Record<string, any>)) {
          expect(ERROR_CODES[code as ErrorCode]?.status, `${route} ${status} ${code}`).toBe(Number(status));
          expect(example.value.error.code).toBe(code);
        }
      }
    }
  });

  it('429, 503 and the 409 of an Idempotency-Key operation document Retry-After; every response documents X-Request-Id', () => {
    for (const { route, operation } of operations) {
      const idempotent = ((operation.parameters ?? []) as any[]).some((p) => p.in === 'header' && p.name === 'Idempotency-Key');
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        expect(response.headers?.['X-Request-Id'], `${route} ${status}`).toBeDefined();
        if (status === '429' || status === '503' || (status === '409' && idempotent)) expect(response.headers['Retry-After'], `${route} ${status}`).toBeDefined();
      }
    }
  });

  it('every enumeration is documented', () => {
    for (const [name, schema] of Object.entries(document.components.schemas as Record<string, any>)) {
      if (!Array.isArray(schema.enum)) continue;
      expect(schema.description, name).toEqual(expect.any(String));
    }
    expect(document.components.schemas.LifecycleDetail['x-enumDescriptions'].cancelled_by_partner).toMatch(/lifecycle `cancelled`/);
  });

  it('keeps no schema it does not use (the library error schemas are replaced by ErrorEnvelope)', () => {
    expect(Object.keys(document.components.schemas).filter((name) => name.startsWith('error.'))).toEqual([]);
  });

  it('passes `redocly lint` (recommended rules, redocly.yaml) with no errors and no warnings', () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const result = spawnSync(join(PROJECT_ROOT, 'node_modules/.bin/redocly'), ['lint', '--config', join(PROJECT_ROOT, 'redocly.yaml'), '--format=json', file], {
      encoding: 'utf8',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    const report = JSON.parse(result.stdout.slice(result.stdout.indexOf('{')));
    expect(report.problems, JSON.stringify(report.problems, null, 1)).toEqual([]);
    expect(result.status).toBe(0);
  }, 60_000);
});

/** Every schema under `schema`, $refs followed once each, with where it sits. */
function* schemasUnder(schema: any, at: string, seen = new Set<string>()): Generator<{ at: string; schema: any }> {
  if (!schema || typeof schema !== 'object') return;
  if (typeof schema.$ref === 'string') {
    if (seen.has(schema.$ref)) return;
    seen.add(schema.$ref);
    const name = schema.$ref.replace('#/components/schemas/', '');
    yield* schemasUnder(document.components.schemas[name], name, seen);
    return;
  }
  yield { at, schema };
  for (const [name, child] of Object.entries(schema.properties ?? {})) yield* schemasUnder(child, `${at}.${name}`, seen);
  for (const key of ['items', 'additionalProperties', 'propertyNames']) if (schema[key]) yield* schemasUnder(schema[key], `${at}[${key}]`, seen);
  for (const key of ['anyOf', 'oneOf', 'allOf']) for (const [i, child] of (schema[key] ?? []).entries()) yield* schemasUnder(child, `${at}/${key}${i}`, seen);
}

/** The schema of every value a request carries: parameters and JSON bodies. */
function* requestSchemas(): Generator<{ at: string; schema: any; in?: string }> {
  for (const { route, operation } of operations) {
    // A header's characters are HTTP's to refuse, before the API sees them.
    for (const parameter of (operation.parameters ?? []).filter((p: any) => p.in !== 'header')) for (const found of schemasUnder(parameter.schema, `${route} ${parameter.in} ${parameter.name}`)) yield { ...found, in: parameter.in };
    const body = operation.requestBody?.content?.['application/json']?.schema;
    if (body) yield* schemasUnder(body, `${route} body`);
  }
}

/** Formats whose values hold no control character, so the format states the rule. */
const CHARACTER_SAFE_FORMATS = new Set(['uuid', 'date-time', 'date', 'uri', 'email']);
const patternsOf = (schema: any): string[] => [schema.pattern, ...(schema.allOf ?? []).map((part: any) => part.pattern)].filter(Boolean);

describe('the document states what the API enforces: a generator or fuzzer that trusts it is never refused', () => {
  it('every request string states, as a pattern, the characters it refuses (400 invalid_characters)', () => {
    const silent = [...requestSchemas()]
      .filter(({ schema }) => schema.type === 'string' && !schema.enum && schema.const === undefined && !CHARACTER_SAFE_FORMATS.has(schema.format))
      .filter(({ schema }) => !patternsOf(schema).some((pattern) => !new RegExp(pattern, 'u').test('a\u0000b') && !new RegExp(pattern, 'u').test('a\u001bb')))
      .map(({ at }) => at);
    expect(silent).toEqual([]);
  });

  it('a query parameter refused when empty (400 empty_value) says minLength 1', () => {
    const query = [...requestSchemas()].filter((found) => found.in === 'query' && found.schema.type === 'string' && !found.schema.enum);
    expect(query.length).toBeGreaterThan(0);
    const refusesEmpty = (schema: any) => schema.minLength >= 1 || patternsOf(schema).some((pattern) => !new RegExp(pattern, 'u').test(''));
    expect(query.filter(({ schema }) => !refusesEmpty(schema)).map(({ at }) => at)).toEqual([]);
  });

  it('uses only formats JSON Schema and OpenAPI define', () => {
    const STANDARD = new Set(['date-time', 'date', 'time', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uri', 'uri-reference', 'uuid', 'regex', 'int32', 'int64', 'float', 'double', 'byte', 'binary', 'password']);
    const all = Object.entries(document.components.schemas).flatMap(([name, schema]) => [...schemasUnder(schema, name)]);
    expect(all.filter(({ schema }) => typeof schema.format === 'string' && !STANDARD.has(schema.format)).map(({ at, schema }) => `${at}: ${schema.format}`)).toEqual([]);
  });

  it('names its licence and a contact', () => {
    expect(document.info.license?.name).toEqual(expect.any(String));
    expect(document.info.license.identifier ?? document.info.license.url).toEqual(expect.any(String));
    expect(document.info.contact?.name).toEqual(expect.any(String));
  });
});

describe('report.retrieval_path, relative to base_url, while a generated client\'s base is the origin', () => {
  it('the document says so where the field is described, with the prefix to put in front', () => {
    const field = [...Object.entries(document.components.schemas)].flatMap(([name, schema]) => [...schemasUnder(schema, name)]).find(({ at }) => at.endsWith('.retrieval_path'));
    expect(field?.schema.description).toContain(`{origin}${PARTNER_BASE_PATH}`);
    expect(field?.schema.description).toContain(`origin + '${PARTNER_BASE_PATH}' + retrieval_path`);
  });

  it('docs/results-reports-exceptions.md shows how each generated client follows it', () => {
    const page = readFileSync(join(PROJECT_ROOT, 'docs/results-reports-exceptions.md'), 'utf8');
    for (const client of ['openapi-fetch', 'openapi-python-client', 'Postman', 'curl']) expect(page, client).toMatch(new RegExp(`${client}[^\\n]*\\n\\s+\`[^\\n]*retrieval_path`, 'i'));
  });
});
