import { randomBytes } from 'node:crypto';
import { PARTNER_BASE_PATH } from '@lop/contract';
import type { BenchData } from './load-data';

export interface BenchRequest {
  path: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

/** GET /v1/orders/{id} over the bench client's orders, in the loader's shuffled order. */
export function getOrderRequests(data: BenchData): () => BenchRequest {
  const headers = { authorization: `Bearer ${data.key}` };
  let next = 0;
  return () => ({ path: `${PARTNER_BASE_PATH}/v1/orders/${data.orderIds[next++ % data.orderIds.length]}`, headers });
}

/** POST /v1/orders, each with its own Idempotency-Key and external_order_id. */
export function createOrderRequests(data: BenchData): () => BenchRequest {
  const auth = { authorization: `Bearer ${data.key}` };
  const runId = randomBytes(3).toString('hex');
  let created = 0;
  return () => {
    const n = created++;
    return {
      method: 'POST',
      path: `${PARTNER_BASE_PATH}/v1/orders`,
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': `bench-${runId}-${n}` },
      body: JSON.stringify({ external_order_id: `bench-create-${runId}-${n}`, program_id: data.programId, item_id: data.itemId, external_subject_id: data.subject, collection: 'in_person_draw', region: 'US-CA' }),
    };
  };
}
