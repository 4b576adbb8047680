import { expect } from 'vitest';
import { z } from 'zod';
import type { TestResponse } from './harness';

/** DESIGN §3: `{data, request_id, cursor?}`; the X-Request-Id header equals request_id. */
export function expectSuccess(response: TestResponse, status = 200): any {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.body).toHaveProperty('data');
  expect(response.body.request_id).toMatch(/^req_[0-9a-f]{24}$/);
  expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
  return response.body.data;
}

/** A list: data is an array and the envelope's cursor is null (nothing more to read). */
export function expectList(response: TestResponse): any[] {
  const data = expectSuccess(response);
  expect(Array.isArray(data)).toBe(true);
  expect(response.body).toHaveProperty('cursor', null);
  return data;
}

const errorEnvelope = z.strictObject({
  error: z.strictObject({
    code: z.string().regex(/^[a-z_]+$/),
    message: z.string().min(1),
    details: z.array(z.strictObject({ field: z.string().optional(), issue: z.string(), message: z.string().optional() })).min(1).optional(),
  }),
  request_id: z.string().regex(/^req_[0-9a-f]{24}$/),
});

/** The one error envelope (DESIGN §3), with nothing internal in it. */
export function expectError(response: TestResponse, status: number, code: string) {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const parsed = errorEnvelope.safeParse(response.body);
  expect(parsed.success, `not the error envelope: ${response.text}`).toBe(true);
  expect(response.body.error.code).toBe(code);
  expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
  expectNothingInternal(response.text);
  return response.body.error as { code: string; message: string; details?: { field?: string; issue: string; message?: string }[] };
}

/**
 * A stack frame: "at fn (/path/file.js:1:2)", "at /path/file.js:1:2", "at node:internal/x:1:2".
 * The path follows "at " (or "at name (") directly: a loose "at .+:1:2" also matched a validation
 * message ("at most 64 characters") followed by an echoed field name holding a time ("23:59:59").
 */
const STACK_FRAME = /\bat (?:async )?(?:[\w$.<>[\] ]+ \()?(?:file:\/\/|\/|node:|[A-Za-z]:\\)[^\s()"]*:\d+:\d+/;

/** No stack trace, SQL, driver or library vocabulary in a response body. */
export function expectNothingInternal(text: string) {
  for (const leak of [STACK_FRAME, /node_modules/, /\.ts\b/, /\bselect\b.+\bfrom\b/i, /\brelation\b/i, /\bcolumn\b/i, /postgres/i, /TRPCError|ZodError|stack/i, /"issues"/, /INTERNAL_SERVER_ERROR|BAD_REQUEST/]) {
    expect(text).not.toMatch(leak);
  }
}

/** Spec types. */
export const uuid = z.uuid();
export const ts = z.iso.datetime({ offset: true });
export const strings = z.array(z.string());
