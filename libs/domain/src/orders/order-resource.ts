import type { LifecycleDetail } from '@lop/contract';
import { asc, inArray } from 'drizzle-orm';
import { specimens, type Database, type orders } from '@lop/db';
import { partnerActionOf, type PartnerAction } from '../exceptions/partner-action';
import { describeState } from './lifecycle';
import type { Order } from './orders.schemas';

export type OrderRow = typeof orders.$inferSelect;
export type SpecimenRow = typeof specimens.$inferSelect;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * The partner-facing Order. Built from columns that hold no personal data. `partner` is what the
 * partner must act on (exceptions/partner-action.ts), which decides next_action with the state.
 */
export function toOrderResource(order: OrderRow, specimenRows: SpecimenRow[], partner: PartnerAction): Order {
  return {
    order_id: order.id,
    external_order_id: order.externalOrderId,
    program_id: order.programId,
    item_id: order.itemId,
    external_subject_id: order.externalSubjectId,
    environment: order.environment,
    ...describeState(order.lifecycleDetail as LifecycleDetail, partner),
    requisition: {
      state: order.requisitionState as Order['requisition']['state'],
      requisition_id: order.requisitionId,
      laboratory_reference: order.laboratoryReference,
      created_at: iso(order.requisitionCreatedAt),
      document: { state: 'not_modeled' },
    },
    accession: {
      accession_number: order.accessionNumber,
      source_system: order.accessionSourceSystem,
      accessioned_at: iso(order.accessionedAt),
      received_at: iso(order.receivedAt),
    },
    specimens: specimenRows.map((s) => ({
      specimen_id: s.id,
      specimen_code: s.specimenCode,
      specimen_type: s.specimenType,
      status: s.status as Order['specimens'][number]['status'],
      accession_number: s.accessionNumber,
      rejection_reason: s.rejectionReason,
      collected_at: iso(s.collectedAt),
      received_at: iso(s.receivedAt),
      recollection_of: s.recollectionOf,
    })),
    transmission: {
      status: order.transmissionStatus as Order['transmission']['status'],
      ack_status: order.ackStatus as Order['transmission']['ack_status'],
      external_order_ref: order.externalOrderRef,
      attempt_no: order.transmissionAttemptNo,
      sent_at: iso(order.sentAt),
      acknowledged_at: iso(order.acknowledgedAt),
    },
    created_at: order.createdAt.toISOString(),
    updated_at: order.updatedAt.toISOString(),
  };
}

type Reader = Pick<Database, 'select'>;

export async function specimensOf(db: Reader, orderIds: string[]): Promise<Map<string, SpecimenRow[]>> {
  const map = new Map<string, SpecimenRow[]>(orderIds.map((id) => [id, []]));
  if (orderIds.length === 0) return map;
  const rows = await db.select().from(specimens).where(inArray(specimens.orderId, orderIds)).orderBy(asc(specimens.createdAt), asc(specimens.id));
  for (const row of rows) map.get(row.orderId)!.push(row);
  return map;
}

export async function orderResource(db: Reader, order: OrderRow): Promise<Order> {
  return toOrderResource(order, (await specimensOf(db, [order.id])).get(order.id)!, await partnerActionOf(db, order.id));
}
