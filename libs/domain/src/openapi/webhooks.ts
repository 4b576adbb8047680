import { EVENT_TYPES, SIGNATURE_TOLERANCE_SECONDS, TEST_DELIVERY_HEADER } from '@lop/contract';
import { deliveryHeaderNames, HEADER_DESCRIPTIONS, retryText } from '../asyncapi/document';
import { sampleEvent } from '../events/sample-events';
import { ENUM_DOCUMENTATION } from '../documents/enum-descriptions';

type Json = Record<string, any>;

export const WEBHOOKS_TAG = {
  name: 'Webhooks',
  description: `Signed deliveries of your event stream to the HTTPS endpoint registered for your API client and environment (sandbox endpoints: in the sandbox console; production: by the laboratory's administrators). The body is exactly the event object \`GET /v1/events\` returns. Verify \`x-partner-signature\` before parsing, reject timestamps more than ${SIGNATURE_TOLERANCE_SECONDS} seconds away, deduplicate on \`event_id\`, order by \`sequence\`.`,
};

/**
 * OpenAPI 3.1 `webhooks`: one delivery per event type, with its headers (read from the signer,
 * like the AsyncAPI document) and its body (the Event schema with that type), so every payload
 * appears in the API reference next to the routes.
 */
export function openApiWebhooks(): Json {
  const required = deliveryHeaderNames();
  // The test mark is documented beside the headers every delivery carries, as optional.
  const headers = [...required, TEST_DELIVERY_HEADER].map((name) => {
    const known = HEADER_DESCRIPTIONS[name] ?? { description: name };
    return { name, in: 'header', required: required.includes(name), description: known.description, schema: { type: 'string', ...known.schema } };
  });
  return Object.fromEntries(
    EVENT_TYPES.map((type, index) => [
      type,
      {
        post: {
          operationId: `webhook.${type}`,
          tags: [WEBHOOKS_TAG.name],
          summary: type,
          description: `${ENUM_DOCUMENTATION.EventType.values[type]}\n\nDelivered to your endpoint as a signed POST. ${retryText()}`,
          parameters: headers,
          // Not a call to the API: the delivery is authenticated by its x-partner-signature header, which the receiver verifies.
          security: [],
          requestBody: {
            required: true,
            description: 'The event, byte for byte as signed: the same object `GET /v1/events` returns.',
            content: {
              'application/json': {
                schema: { allOf: [{ $ref: '#/components/schemas/Event' }, { type: 'object', properties: { type: { const: type } } }] },
                example: sampleEvent(type, index),
              },
            },
          },
          responses: {
            '2XX': { description: 'Acknowledged: answer any 2xx within 10 seconds. Only the status counts; the first 2 KB of your body are kept with the attempt for you to read.' },
            default: { description: 'Not acknowledged: retried or dead-lettered by the rules above.' },
          },
        },
      },
    ]),
  );
}
