import type { Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { exceptionRowsOf, toOrderExceptions } from '../exceptions/exceptions';
import type { OrderExceptions } from '../exceptions/exceptions.schemas';
import { findOrderForCaller } from './orders';

/** GET /v1/orders/{orderId}/exceptions: 404 for an order the caller cannot see. */
export async function listOrderExceptions(db: Database, caller: Caller, orderId: string): Promise<OrderExceptions> {
  const order = await findOrderForCaller(db, caller, orderId);
  return toOrderExceptions(order.id, await exceptionRowsOf(db, order.id));
}
