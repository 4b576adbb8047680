import { createHmac } from 'node:crypto';
import { deliveryHeaders as buildDeliveryHeaders, type DeliveryHeadersInput } from '@lop/contract';

const hmacSha256Hex = (key: string, message: string) => createHmac('sha256', key).update(message).digest('hex');

/** Every header of one delivery attempt, signed with the subscription's secret. */
export function deliveryHeaders(input: DeliveryHeadersInput): Record<string, string> {
  return buildDeliveryHeaders(hmacSha256Hex, input);
}
