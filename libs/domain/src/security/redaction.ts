/**
 * The one list of fields the service never writes anywhere but their own sealed columns: keys and
 * secrets, and the personal data an order carries (the fields `orders.ts` seals with the protector).
 * The logger's redaction paths (apps/partner-api/src/main.ts) are made from it, and the request
 * log's allow-list (request-log/allow-list.ts) never keeps these fields' values, whatever their type.
 */
export const REDACTED_FIELDS = ['authorization', 'sandbox_key', 'key', 'secret', 'patient', 'ordering_provider', 'aoe_answers', 'clinical_notes'] as const;

export const REDACTED = '[redacted]';

/** pino's redact paths: each field one level down in a log line, and the request's Authorization header. */
export const LOG_REDACT_PATHS = ['req.headers.authorization', ...REDACTED_FIELDS.map((field) => `*.${field}`)];

const redactedFields: ReadonlySet<string> = new Set(REDACTED_FIELDS);
/** An API key or a webhook signing secret, wherever it appears in a value (api-key.ts, webhooks/signature.ts). */
const SECRET_TEXT = /lop_(?:test|live)_[0-9A-Za-z]+|whsec_[0-9A-Za-z_-]+/g;
/** NUL and lone surrogates: jsonb refuses them, and one in a stored body would fail its whole batch. */
// eslint-disable-next-line no-control-regex -- control characters are what this matches
const UNSTORABLE = /\u0000|\p{Cs}/gu;
const storable = (text: string) => text.replace(UNSTORABLE, '\uFFFD');

/**
 * A copy of a JSON value with every field named in REDACTED_FIELDS replaced by "[redacted]", at any
 * depth (a log line's paths reach one level; a body nests), and any key or signing secret inside a
 * string value replaced too, so a key pasted into the wrong field is not kept either. Text jsonb
 * cannot hold (a refused request may carry it) becomes U+FFFD.
 */
export function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return storable(value.replace(SECRET_TEXT, REDACTED));
  if (Array.isArray(value)) return value.map(redactValue);
  if (value && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [field, inner] of Object.entries(value)) copy[storable(field)] = redactedFields.has(field.toLowerCase()) ? REDACTED : redactValue(inner);
    return copy;
  }
  return value;
}
