import { createHmac } from 'node:crypto';
import { deliveryHeaders as buildDeliveryHeaders, type DeliveryHeadersInput } from '@lop/contract';

// The headers, the signing scheme and the secret format are published vocabulary (@lop/contract); re-exported for the domain's modules.
export { generateSigningSecret, SIGNATURE_TOLERANCE_SECONDS, TEST_DELIVERY_HEADER, type DeliveryHeadersInput } from '@lop/contract';

const hmacSha256Hex = (key: string, message: string) => createHmac('sha256', key).update(message).digest('hex');

/** Every header of one delivery attempt, signed with the subscription's secret. */
export function deliveryHeaders(input: DeliveryHeadersInput): Record<string, string> {
  return buildDeliveryHeaders(hmacSha256Hex, input);
}
