import type { z } from 'zod';

/**
 * Response data whose JSON text already exists: an event page is the events' bytes as stored at
 * append (events.body), validated when they were written. The REST door sends that text as it is
 * (responseJson), and the procedure's output schema accepts such a value without checking it
 * again (acceptsPrerendered). Anything that reads the value as an object (the console's tRPC
 * door, a test) still gets the same data: the text is the value's JSON.
 */
const rendered = new WeakMap<object, string | Buffer>();

/** Records that `value`'s JSON is exactly `json` (text, or its UTF-8 bytes); returns `value`. */
export function prerendered<T extends object>(value: T, json: string | Buffer): T {
  rendered.set(value, json);
  return value;
}

// Stands in for the pre-rendered data while the envelope around it is serialised; JSON escapes
// the NUL characters, so no other string of the envelope can spell it.
const PLACEHOLDER = '\u0000prerendered\u0000';
const PLACEHOLDER_JSON = JSON.stringify(PLACEHOLDER);

/**
 * The JSON of a success envelope (`{data, request_id, …}`), its `data` sent as rendered when it
 * was: text, or UTF-8 bytes when the data was rendered as bytes (a page of stored events is
 * copied from the database's rows into the response without being decoded). `indent` indents
 * a response that is not pre-rendered (FHIR's `_pretty=true`).
 */
export function responseJson(envelope: unknown, indent?: number): string | Buffer {
  const data = envelope && typeof envelope === 'object' ? (envelope as { data?: unknown }).data : undefined;
  const json = data && typeof data === 'object' ? rendered.get(data) : undefined;
  if (json === undefined) return JSON.stringify(envelope, null, indent);
  const outer = JSON.stringify({ ...(envelope as object), data: PLACEHOLDER });
  const at = outer.indexOf(PLACEHOLDER_JSON);
  const [before, after] = [outer.slice(0, at), outer.slice(at + PLACEHOLDER_JSON.length)];
  return typeof json === 'string' ? before + json + after : Buffer.concat([Buffer.from(before), json, Buffer.from(after)]);
}

/** The output schema of a procedure whose envelope `data` may be pre-rendered: such a value is answered as it is, anything else checked. */
export function acceptsPrerendered<T extends z.ZodType>(schema: T): T {
  const parseAsync = schema.parseAsync.bind(schema);
  return Object.assign(schema, {
    parseAsync: async (value: unknown, params?: Parameters<T['parseAsync']>[1]) => {
      const data = value && typeof value === 'object' ? (value as { data?: unknown }).data : undefined;
      if (data && typeof data === 'object' && rendered.has(data)) return value;
      return parseAsync(value, params);
    },
  });
}
