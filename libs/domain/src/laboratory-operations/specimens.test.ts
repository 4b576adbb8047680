import { afterAll, describe, expect, it } from 'vitest';
import { exceptionRowsOf } from '../exceptions/exceptions';
import { acceptOrder } from './acceptance';
import { accessionSpecimen, collectSpecimen, receiveSpecimen, rejectSpecimen, shipSpecimen } from './specimens';
import { driveTo, newOrder, openTestDatabase } from '../../testing/orders';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

const at = (iso: string) => new Date(iso);

describe('specimens', () => {
  it('collect, ship, receive and accession move one specimen and the order together', async () => {
    const { order, itemSpecimenType } = await newOrder(db);
    await acceptOrder(db, { order_id: order.id });

    const collected = await collectSpecimen(db, { order_id: order.id, specimen_code: 'TUBE-1', collected_at: '2025-03-02T08:00:00Z' });
    expect(collected.order).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'specimen_collected', next_action: 'wait_for_results' });
    expect(collected.order.specimens).toEqual([collected.specimen]);
    expect(collected.specimen).toMatchObject({ specimen_code: 'TUBE-1', specimen_type: itemSpecimenType, status: 'collected', collected_at: '2025-03-02T08:00:00.000Z', recollection_of: null });

    const shipped = await shipSpecimen(db, { order_id: order.id });
    expect(shipped.order.lifecycle_detail).toBe('in_transit');
    expect(shipped.order.specimens.map((s) => s.status)).toEqual(['in_transit']);

    const received = await receiveSpecimen(db, { order_id: order.id }, at('2025-03-02T12:00:00Z'));
    expect(received.order.lifecycle_detail).toBe('received_by_laboratory');
    expect(received.specimen).toMatchObject({ status: 'received', received_at: '2025-03-02T12:00:00.000Z' });
    expect(received.order.accession.received_at).toBe('2025-03-02T12:00:00.000Z');

    const accessioned = await accessionSpecimen(db, { order_id: order.id, accession_number: 'A-2025-0001', source_system: 'Sunquest' }, at('2025-03-02T12:30:00Z'));
    expect(accessioned.order).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'in_testing', next_action: 'wait_for_results' });
    expect(accessioned.order.accession).toEqual({ accession_number: 'A-2025-0001', source_system: 'Sunquest', accessioned_at: '2025-03-02T12:30:00.000Z', received_at: '2025-03-02T12:00:00.000Z' });
    expect(accessioned.specimen).toMatchObject({ status: 'accessioned', accession_number: 'A-2025-0001' });
  });

  it('a specimen can be received straight after collection (no transit step)', async () => {
    const { order } = await newOrder(db);
    await driveTo(db, order.id, 'specimen_collected');
    const received = await receiveSpecimen(db, { order_id: order.id });
    expect(received.order.lifecycle_detail).toBe('received_by_laboratory');
  });

  it('rejection opens a specimen_rejected exception for the partner; the replacement points at the rejected specimen and resolves it', async () => {
    const { order } = await newOrder(db);
    await driveTo(db, order.id, 'in_testing');
    const rejected = await rejectSpecimen(db, { order_id: order.id, reason: 'hemolyzed' });
    expect(rejected.order).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'recollection_required', next_action: 'recollect_specimen' });
    expect(rejected.specimen).toMatchObject({ status: 'rejected', rejection_reason: 'hemolyzed' });
    expect(rejected.exception).toMatchObject({ category: 'specimen_rejected', owner_role: 'partner', entity_type: 'specimen', entity_id: rejected.specimen.specimen_id, status: 'open', retryable: true });

    const replacement = await collectSpecimen(db, { order_id: order.id });
    expect(replacement.order.lifecycle_detail).toBe('specimen_collected');
    expect(replacement.specimen.recollection_of).toBe(rejected.specimen.specimen_id);
    expect(replacement.order.specimens.map((s) => [s.specimen_id, s.status])).toEqual([
      [rejected.specimen.specimen_id, 'rejected'],
      [replacement.specimen.specimen_id, 'collected'],
    ]);
    const [exception] = await exceptionRowsOf(db, order.id);
    expect(exception).toMatchObject({ status: 'resolved', resolutionText: 'A replacement specimen was collected.' });

    // The replacement goes through the lab; the rejected one is untouched.
    await shipSpecimen(db, { order_id: order.id });
    await receiveSpecimen(db, { order_id: order.id });
    const accessioned = await accessionSpecimen(db, { order_id: order.id });
    expect(accessioned.order.specimens.map((s) => s.status)).toEqual(['rejected', 'accessioned']);
    expect(accessioned.specimen.specimen_id).toBe(replacement.specimen.specimen_id);
  });

  it('a first collection is not a recollection', async () => {
    const { order } = await newOrder(db);
    await driveTo(db, order.id, 'specimen_collected');
    const again = await collectSpecimen(db, { order_id: order.id }).catch((e: Error) => e);
    expect(again).toMatchObject({ name: 'IllegalTransitionError' });
  });
});
