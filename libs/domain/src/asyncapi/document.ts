import {
  EVENT_TYPES,
  PARTNER_API_VERSION,
  RETRY_AFTER_MAX_SECONDS,
  SIGNATURE_TOLERANCE_SECONDS,
  SPEC_RETRY_DELAYS_SECONDS,
  TEST_DELIVERY_HEADER,
  type EventType,
} from '@lop/contract';
import { z } from 'zod';
import { ENUM_DOCUMENTATION, enumDocumentation } from '../documents/enum-descriptions';
import { eventSchema } from '../events/events.schemas';
import { sampleEvent } from '../events/sample-events';
import { classifyStatus } from '../webhooks/retry-policy';
import { deliveryHeaders } from '../webhooks/signature';

type Json = Record<string, any>;

export const HEADER_DESCRIPTIONS: Record<string, { description: string; schema?: Json }> = {
  'content-type': { description: 'Always `application/json`.', schema: { const: 'application/json' } },
  'user-agent': { description: 'Identifies the delivery service.' },
  'x-partner-signature': {
    description: `\`v1=\` followed by the hex HMAC-SHA256, keyed with the subscription's signing secret, of the timestamp header value, a dot, and the raw body. Verify it (constant-time) before parsing the body.`,
    schema: { pattern: '^v1=[0-9a-f]{64}$' },
  },
  'x-partner-timestamp': {
    description: `Unix seconds used in the signed material. Reject a delivery more than ${SIGNATURE_TOLERANCE_SECONDS} seconds from your clock.`,
    schema: { pattern: '^[0-9]+$' },
  },
  'x-partner-event-id': { description: 'The event identifier (`event_id`); deduplicate on it.' },
  'x-partner-delivery-id': { description: 'Identifier of this delivery attempt; ignore one you already processed.' },
  [TEST_DELIVERY_HEADER]: {
    description:
      '`true` on a test delivery only (sent from the sandbox console or by the laboratory\'s administrators): an event envelope of the chosen type whose event is in no stream (`sequence` 0, `external_order_id` `test-delivery`). Absent on every real delivery.',
    schema: { const: 'true' },
  },
  'x-partner-api-version': {
    description: 'API version of the payload: `v1`, the same as the `/v1` path and the OpenAPI `info.version`. Not the event `version` (the payload schema version, an integer) nor the service build.',
    schema: { const: PARTNER_API_VERSION },
  },
};

/** The header names of an event delivery, read from the signer itself so no document can drift from it. */
export const deliveryHeaderNames = () => Object.keys(deliveryHeaders({ secret: 'documentation', body: '{}', timestamp: 0, deliveryId: 'delivery', eventId: 'event' }));

/** The headers of an event delivery, read from the signer itself so the document cannot drift from it. */
function deliveryHeadersSchema(): Json {
  const names = deliveryHeaderNames();
  return {
    type: 'object',
    description: 'HTTP headers of every event delivery (a POST to the subscribed HTTPS endpoint).',
    properties: Object.fromEntries(
      [...names, TEST_DELIVERY_HEADER].map((name) => {
        const known = HEADER_DESCRIPTIONS[name] ?? { description: name };
        return [name, { type: 'string', description: known.description, ...known.schema }];
      }),
    ),
    required: names,
  };
}

/**
 * JSON Schema (draft-07, which AsyncAPI schemas extend) of a Zod schema; named sub-schemas
 * (`.meta({ id })`) are hoisted into `components.schemas` and referenced from there.
 */
function toComponentSchema(schema: z.ZodType, components: Json): Json {
  const json = z.toJSONSchema(schema, { target: 'draft-7', io: 'output', unrepresentable: 'any' }) as Json;
  const { $schema: _ignored, definitions = {}, ...root } = json;
  // A schema that is itself named comes back as a reference to its own definition: take the definition.
  const rootName = typeof root.$ref === 'string' ? root.$ref.replace('#/definitions/', '') : null;
  const rest = rootName && definitions[rootName] ? definitions[rootName] : root;
  if (rootName) delete definitions[rootName];
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (!node || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out[key] = value.replace('#/definitions/', '#/components/schemas/');
      // Zod bounds every integer by the safe-integer range: true, and only noise for a reader.
      else if ((key === 'minimum' || key === 'maximum') && Math.abs(value as number) === Number.MAX_SAFE_INTEGER) continue;
      else out[key] = rewrite(value);
    }
    return out;
  };
  for (const [name, definition] of Object.entries(definitions as Json)) {
    const documented = enumDocumentation(name);
    components[name] = rewrite(documented && Array.isArray((definition as Json).enum) ? { ...(definition as Json), description: documented.description } : definition);
  }
  return rewrite(rest) as Json;
}

const duration = (seconds: number) => (seconds % 3600 === 0 ? `${seconds / 3600} h` : seconds % 60 === 0 ? `${seconds / 60} min` : `${seconds} s`);

/** The retry rules in words, read from the retry policy itself. */
export function retryText(): string {
  const temporary4xx = Array.from({ length: 100 }, (_, i) => 400 + i).filter((status) => classifyStatus(status) === 'temporary');
  return `Answer 2xx within 10 seconds; timeouts, network failures, ${temporary4xx.join(', ')} and 5xx are retried after ${SPEC_RETRY_DELAYS_SECONDS.map(duration).join(', ')} (${SPEC_RETRY_DELAYS_SECONDS.length + 1} attempts in total; Retry-After honoured up to ${RETRY_AFTER_MAX_SECONDS / 60} minutes); redirects and other 4xx are permanent.`;
}

const messageName = (type: EventType) => type.replace(/\.(.)/g, (_m, c: string) => c.toUpperCase()).replace(/_(.)/g, (_m, c: string) => c.toUpperCase());

/**
 * The AsyncAPI 3 description of webhook deliveries, generated from the same Zod event schema the
 * stream and the outbox use. One message per event type; each delivery body is the event object
 * GET /v1/events returns.
 */
export function buildAsyncApiDocument(): Json {
  const schemas: Json = {};
  schemas.Event = toComponentSchema(eventSchema, schemas);
  for (const type of EVENT_TYPES) {
    schemas[`Event.${type}`] = toComponentSchema(eventSchema.extend({ type: z.literal(type) }), schemas);
  }
  schemas.DeliveryHeaders = deliveryHeadersSchema();

  const messages = Object.fromEntries(
    EVENT_TYPES.map((type, index) => [
      type,
      {
        name: type,
        title: messageName(type),
        summary: ENUM_DOCUMENTATION.EventType.values[type],
        contentType: 'application/json',
        headers: { $ref: '#/components/schemas/DeliveryHeaders' },
        payload: { $ref: `#/components/schemas/Event.${type}` },
        correlationId: { $ref: '#/components/correlationIds/eventId' },
        bindings: { http: { bindingVersion: '0.3.0' } },
        examples: [{ name: `${messageName(type)}Example`, payload: sampleEvent(type, index) }],
      },
    ]),
  );

  return {
    asyncapi: '3.1.0',
    info: {
      title: 'Laboratory Ordering Partner Webhooks',
      version: PARTNER_API_VERSION,
      description: [
        'Signed webhook deliveries of the partner event stream. A delivery body is the same event object `GET /v1/events` returns; the API, not the webhook, is authoritative: events carry identifiers and coarse state only.',
        '',
        `Delivery is at least once: duplicates and out-of-order arrival are possible. Deduplicate on \`event_id\`, order by \`sequence\`, and after any gap replay \`GET /v1/events\` from your last cursor. Verify \`x-partner-signature\` before parsing; reject timestamps more than ${SIGNATURE_TOLERANCE_SECONDS} seconds away. ${retryText()}`,
      ].join('\n'),
    },
    defaultContentType: 'application/json',
    channels: {
      webhookDeliveries: {
        address: null,
        title: 'Webhook deliveries',
        description: 'The HTTPS endpoint registered for your API client and environment (sandbox: by you, in the sandbox console; production: by a laboratory administrator), with the event types it subscribes to.',
        messages: Object.fromEntries(EVENT_TYPES.map((type) => [type, { $ref: `#/components/messages/${type}` }])),
      },
    },
    operations: {
      deliverEvent: {
        action: 'send',
        channel: { $ref: '#/channels/webhookDeliveries' },
        title: 'Deliver an event',
        summary: 'POST one signed event to the subscribed endpoint.',
        security: [{ $ref: '#/components/securitySchemes/webhookSignature' }],
        bindings: { http: { method: 'POST', bindingVersion: '0.3.0' } },
        messages: EVENT_TYPES.map((type) => ({ $ref: `#/channels/webhookDeliveries/messages/${type}` })),
      },
    },
    components: {
      schemas,
      messages,
      correlationIds: { eventId: { description: 'The event identifier, also in the x-partner-event-id header.', location: '$message.payload#/event_id' } },
      securitySchemes: {
        webhookSignature: {
          type: 'httpApiKey',
          name: 'x-partner-signature',
          in: 'header',
          description: 'Not a key: an HMAC-SHA256 signature made with the subscription signing secret (shown once at creation or rotation; separate from API keys). See the x-partner-signature header.',
        },
      },
    },
  };
}
