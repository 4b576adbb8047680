import type { orders } from '@lop/db';
import type { OrderRow } from '../orders/order-resource';
import { laboratoryReference } from './identifiers';

/** The columns that issue the order's requisition, or nothing when it is already issued. */
export function issueRequisition(
  order: OrderRow,
  input: { requisition_id?: string; laboratory_reference?: string },
  now: Date,
): Partial<typeof orders.$inferInsert> {
  if (order.requisitionState === 'issued') return {};
  return {
    requisitionState: 'issued',
    requisitionId: input.requisition_id ?? laboratoryReference('REQ'),
    laboratoryReference: input.laboratory_reference ?? laboratoryReference('LAB'),
    requisitionCreatedAt: now,
  };
}
