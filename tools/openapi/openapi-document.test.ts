import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forEachOpenApiProcedure } from 'trpc-to-openapi';
import type { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, ERROR_CODES, PARTNER_BASE_PATH, partnerRouter, PROJECT_ROOT, type ErrorCode, type ProcedureMeta } from '@lop/domain';

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
