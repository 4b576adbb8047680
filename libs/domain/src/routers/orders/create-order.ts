import { LIMITS } from '@lop/contract';
import { ok } from '../../http/envelope';
import { PartnerError } from '../../http/errors';
import { runIdempotently } from '../../orders/idempotency';
import { createOrder as create } from '../../orders/orders';
import type { Order } from '../../orders/orders.schemas';
import { partnerProcedure } from '../../trpc';
import { createOrderInput, createOrderMeta, createOrderOutput } from './create-order.types';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The header's length in characters, as the spec counts it. Node hands a header over as one
 * character per byte, so a key sent as UTF-8 (what HTTP clients send) is decoded to count its
 * characters; bytes that are not UTF-8 count one each. The key itself is kept byte for byte.
 */
function characterCount(header: string): number {
  try {
    return [...utf8.decode(Buffer.from(header, 'latin1'))].length;
  } catch {
    return header.length;
  }
}

function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string {
  const value = headers['idempotency-key'];
  const key = Array.isArray(value) ? value[0] : value;
  if (!key) throw new PartnerError('invalid_request', 'Send an Idempotency-Key header.', { details: [{ field: 'Idempotency-Key', issue: 'required' }] });
  if (characterCount(key) > LIMITS.idempotencyKey) {
    throw new PartnerError('invalid_request', `The Idempotency-Key header is longer than ${LIMITS.idempotencyKey} characters.`, { details: [{ field: 'Idempotency-Key', issue: 'too_long' }] });
  }
  return key;
}

export const createOrder = partnerProcedure(createOrderMeta)
  .input(createOrderInput)
  .output(createOrderOutput)
  .mutation(async ({ ctx, input }) => {
    const key = idempotencyKeyOf(ctx.headers);
    const outcome = await runIdempotently<Order>(ctx.db, ctx.caller, key, input, async (tx) => ({
      status: 201,
      data: await create(tx, ctx.protector, ctx.caller, input),
    }), { gate: ctx.writeGate, waitSeconds: ctx.idempotencyWaitSeconds, spanName: 'orders.create' });
    ctx.response.status = outcome.status;
    if (outcome.replayed) ctx.response.headers['Idempotent-Replayed'] = 'true';
    return ok(ctx, outcome.data);
  });
