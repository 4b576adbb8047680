import { randomUUID } from 'node:crypto';
import type { LifecycleDetail } from '@lop/contract';
import { and, desc, eq, ne } from 'drizzle-orm';
import { catalogItems, specimens, type Database, type Transaction } from '@lop/db';
import type { EventDraft } from '../events/append';
import { nextState } from '../orders/lifecycle';
import type { OrderRow, SpecimenRow } from '../orders/order-resource';
import type { Order } from '../orders/orders.schemas';
import { changeOrderState, orderEvent } from '../orders/state-change';
import { insertException } from './exceptions';
import { factTime } from './fact-time';
import { laboratoryReference } from './identifiers';
import { LaboratoryOperationError, operateOnOrder } from './operation';
import { operatorException, operatorSpecimen } from './operator-views';

type SpecimenStatus = Order['specimens'][number]['status'];

function specimenEvent(status: SpecimenStatus, now: Date) {
  return (order: OrderRow): EventDraft[] => [orderEvent(order, 'specimen.updated', now, { specimen_state: status })];
}

/** The specimen being worked on: the newest one not rejected. */
async function currentSpecimen(tx: Transaction, order: OrderRow): Promise<SpecimenRow> {
  const [row] = await tx
    .select()
    .from(specimens)
    .where(and(eq(specimens.orderId, order.id), ne(specimens.status, 'rejected')))
    .orderBy(desc(specimens.createdAt), desc(specimens.id))
    .limit(1)
    .for('update');
  if (!row) throw new LaboratoryOperationError('conflict', `order ${order.id} has no specimen in progress`);
  return row;
}

async function updateSpecimen(tx: Transaction, id: string, patch: Partial<typeof specimens.$inferInsert>): Promise<SpecimenRow> {
  const [row] = await tx.update(specimens).set(patch).where(eq(specimens.id, id)).returning();
  return row;
}

/**
 * A specimen is collected. After a rejection the new specimen records which one it replaces,
 * and the rejection's open exception is resolved. The events occur at collected_at when the
 * laboratory reports it: the collection is the fact, recording it is not.
 */
export async function collectSpecimen(
  db: Database,
  input: { order_id: string; specimen_code?: string; specimen_type?: string; collected_at?: string },
  now = new Date(),
) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    nextState(order.lifecycleDetail as LifecycleDetail, 'collect');
    const collectedAt = factTime('collected_at', input.collected_at, now);
    const [rejected] =
      order.lifecycleDetail === 'recollection_required'
        ? await tx
            .select()
            .from(specimens)
            .where(and(eq(specimens.orderId, order.id), eq(specimens.status, 'rejected')))
            .orderBy(desc(specimens.createdAt), desc(specimens.id))
            .limit(1)
        : [];
    const [item] = await tx.select({ specimenType: catalogItems.specimenType }).from(catalogItems).where(eq(catalogItems.id, order.itemId));
    const [specimen] = await tx
      .insert(specimens)
      .values({
        orderId: order.id,
        specimenCode: input.specimen_code ?? laboratoryReference('SPC'),
        specimenType: input.specimen_type ?? item.specimenType,
        status: 'collected',
        collectedAt,
        recollectionOf: rejected?.id ?? null,
        createdAt: now,
      })
      .returning();
    await changeOrderState(
      tx,
      order,
      'collect',
      {
        events: specimenEvent('collected', collectedAt),
        occurredAt: collectedAt,
        settles: rejected ? { category: 'specimen_rejected', entityId: rejected.id, resolution: 'A replacement specimen was collected.' } : undefined,
      },
      now,
    );
    return { specimen: operatorSpecimen(specimen) };
  });
}

/** The collected specimen is on its way to the laboratory. */
export async function shipSpecimen(db: Database, input: { order_id: string }, now = new Date()) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    nextState(order.lifecycleDetail as LifecycleDetail, 'ship');
    const specimen = await updateSpecimen(tx, (await currentSpecimen(tx, order)).id, { status: 'in_transit' });
    await changeOrderState(tx, order, 'ship', { events: specimenEvent('in_transit', now) }, now);
    return { specimen: operatorSpecimen(specimen) };
  });
}

/** The laboratory receives the specimen; the order's accession shows when, and the events occur then. */
export async function receiveSpecimen(db: Database, input: { order_id: string; received_at?: string }, now = new Date()) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    nextState(order.lifecycleDetail as LifecycleDetail, 'receive');
    const receivedAt = factTime('received_at', input.received_at, now);
    const current = await currentSpecimen(tx, order);
    if (current.collectedAt && receivedAt < current.collectedAt) {
      throw new LaboratoryOperationError('invalid', `received_at ${receivedAt.toISOString()} is before the specimen was collected (${current.collectedAt.toISOString()})`);
    }
    const specimen = await updateSpecimen(tx, current.id, { status: 'received', receivedAt });
    await changeOrderState(tx, order, 'receive', { patch: { receivedAt }, events: specimenEvent('received', receivedAt), occurredAt: receivedAt }, now);
    return { specimen: operatorSpecimen(specimen) };
  });
}

/** The received specimen is accessioned: testing starts. */
export async function accessionSpecimen(db: Database, input: { order_id: string; accession_number?: string; source_system?: string }, now = new Date()) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    nextState(order.lifecycleDetail as LifecycleDetail, 'accession');
    const accessionNumber = input.accession_number ?? laboratoryReference('ACC');
    const specimen = await updateSpecimen(tx, (await currentSpecimen(tx, order)).id, { status: 'accessioned', accessionNumber });
    await changeOrderState(
      tx,
      order,
      'accession',
      {
        patch: { accessionId: randomUUID(), accessionNumber, accessionSourceSystem: input.source_system ?? 'laboratory_information_system', accessionedAt: now },
        events: specimenEvent('accessioned', now),
      },
      now,
    );
    return { specimen: operatorSpecimen(specimen) };
  });
}

/**
 * The specimen cannot be tested: it is rejected with its reason, the partner gets a
 * `specimen_rejected` exception to act on, and the order needs a new collection.
 */
export async function rejectSpecimen(db: Database, input: { order_id: string; reason: string }, now = new Date()) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    nextState(order.lifecycleDetail as LifecycleDetail, 'reject_specimen');
    const specimen = await updateSpecimen(tx, (await currentSpecimen(tx, order)).id, { status: 'rejected', rejectionReason: input.reason });
    const opened = await insertException(tx, order, { category: 'specimen_rejected', entity_id: specimen.id }, now);
    await changeOrderState(tx, order, 'reject_specimen', { events: (o) => [...specimenEvent('rejected', now)(o), ...opened.events(o)] }, now);
    return { specimen: operatorSpecimen(specimen), exception: operatorException(opened.row) };
  });
}
