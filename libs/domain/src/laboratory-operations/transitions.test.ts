import { LIFECYCLE_DETAILS, type LifecycleDetail } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { orders, resultVersions, type Database } from '@lop/db';
import { IllegalTransitionError, TRANSITIONS, type Transition } from '../orders/lifecycle';
import { EXCEPTION_CATEGORIES, type ExceptionCategory } from '../exceptions/exceptions.schemas';
import { orderResource } from '../orders/order-resource';
import { acceptOrder } from './acceptance';
import { cancelByLaboratory } from './cancellation';
import { openException, resolveException } from './exceptions';
import { LaboratoryOperationError } from './operation';
import { recordResult } from './result-recording';
import { flagCritical, releaseResult } from './result-release';
import { accessionSpecimen, collectSpecimen, receiveSpecimen, rejectSpecimen, shipSpecimen } from './specimens';
import { newOrder, openTestDatabase, resultBody, snapshot } from '../../testing/orders';
import { acknowledgeOrder, failTransmission, transmitOrder } from './transmission';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

const STATES = Object.keys(LIFECYCLE_DETAILS) as LifecycleDetail[];

/** A recorded (unreleased) version written directly, so a release can be attempted from any state. */
async function recordedResult(db: Database, orderId: string): Promise<string> {
  const [row] = await db
    .insert(resultVersions)
    .values({ orderId, versionType: 'unassigned', state: 'unassigned', status: 'recorded', performingLaboratory: 'Lab', performingLaboratorySystem: 'LIS', sourceResultId: 'R1', observations: [{ analyte: 'x', value: '1' }] })
    .returning();
  return row.id;
}

/** Every laboratory operation with the transition it applies. */
const OPERATIONS: { name: string; transition: Transition; needsRecordedResult?: boolean; run: (orderId: string, resultId: string) => Promise<unknown> }[] = [
  { name: 'transmit', transition: 'transmit', run: (id) => transmitOrder(db, { order_id: id }) },
  { name: 'acknowledge accepted', transition: 'acknowledge_accepted', run: (id) => acknowledgeOrder(db, { order_id: id, status: 'accepted' }) },
  { name: 'acknowledge rejected', transition: 'acknowledge_rejected', run: (id) => acknowledgeOrder(db, { order_id: id, status: 'rejected' }) },
  { name: 'fail transmission', transition: 'fail_transmission', run: (id) => failTransmission(db, { order_id: id }) },
  { name: 'accept', transition: 'accept', run: (id) => acceptOrder(db, { order_id: id }) },
  { name: 'collect', transition: 'collect', run: (id) => collectSpecimen(db, { order_id: id }) },
  { name: 'ship', transition: 'ship', run: (id) => shipSpecimen(db, { order_id: id }) },
  { name: 'receive', transition: 'receive', run: (id) => receiveSpecimen(db, { order_id: id }) },
  { name: 'accession', transition: 'accession', run: (id) => accessionSpecimen(db, { order_id: id }) },
  { name: 'reject specimen', transition: 'reject_specimen', run: (id) => rejectSpecimen(db, { order_id: id, reason: 'clotted' }) },
  { name: 'release partial', transition: 'release_partial', needsRecordedResult: true, run: (_id, resultId) => releaseResult(db, { result_id: resultId, as: 'partial' }) },
  { name: 'release final', transition: 'release_final', needsRecordedResult: true, run: (_id, resultId) => releaseResult(db, { result_id: resultId, as: 'final' }) },
  { name: 'release corrected', transition: 'release_correction', needsRecordedResult: true, run: (_id, resultId) => releaseResult(db, { result_id: resultId, as: 'corrected' }) },
  { name: 'release amended', transition: 'release_correction', needsRecordedResult: true, run: (_id, resultId) => releaseResult(db, { result_id: resultId, as: 'amended' }) },
  { name: 'cancel by laboratory', transition: 'cancel_by_laboratory', run: (id) => cancelByLaboratory(db, { order_id: id }) },
];

const refusals = OPERATIONS.flatMap((op) =>
  STATES.filter((state) => !(TRANSITIONS[op.transition].from as readonly string[]).includes(state)).map((state) => ({ ...op, state })),
);

describe('the one transition table governs every laboratory operation', () => {
  // The state is set directly: the refusal must not depend on how the order got there.
  it.each(refusals)('$name is refused from $state and changes nothing', async ({ state, run, transition, needsRecordedResult }) => {
    const { order } = await newOrder(db);
    await db.update(orders).set({ lifecycleDetail: state }).where(eq(orders.id, order.id));
    const resultId = needsRecordedResult ? await recordedResult(db, order.id) : '';
    const before = await snapshot(db, order.id);
    const attempt = run(order.id, resultId);
    await expect(attempt).rejects.toBeInstanceOf(IllegalTransitionError);
    await expect(attempt).rejects.toThrow(`cannot ${transition.replace(/_/g, ' ')} an order whose state is ${state}`);
    expect(await snapshot(db, order.id)).toEqual(before);
  });

  const notRecordable = STATES.filter((s) => !['in_testing', 'partial_results', 'final_results', 'corrected_results'].includes(s));
  it.each(notRecordable)('recording a result is refused from %s (no release could follow) and stores nothing', async (state) => {
    const { order } = await newOrder(db);
    await db.update(orders).set({ lifecycleDetail: state }).where(eq(orders.id, order.id));
    const before = await snapshot(db, order.id);
    const attempt = recordResult(db, { ...resultBody(), order_id: order.id });
    await expect(attempt).rejects.toBeInstanceOf(LaboratoryOperationError);
    await expect(attempt).rejects.toThrow(`cannot record a result for an order whose state is ${state}`);
    expect(await snapshot(db, order.id)).toEqual(before);
  });

  it('an unknown order is not_found, not an illegal transition', async () => {
    const attempt = transmitOrder(db, { order_id: '00000000-0000-4000-8000-000000000000' });
    await expect(attempt).rejects.toMatchObject({ name: 'LaboratoryOperationError', kind: 'not_found' });
  });
});

/** DESIGN §5: a cancelled or completed order is closed. */
const CLOSED = STATES.filter((state) => ['cancelled', 'completed'].includes(LIFECYCLE_DETAILS[state].lifecycle));
const CATEGORIES = Object.keys(EXCEPTION_CATEGORIES) as ExceptionCategory[];
const PARTNER_OWNED = CATEGORIES.filter((category) => EXCEPTION_CATEGORIES[category].owner_role === 'partner');

describe('a closed order stays closed: no laboratory operation gives the partner something to do on it', () => {
  const partnerExceptions = CLOSED.flatMap((state) => [
    ...PARTNER_OWNED.map((category) => ({ state, category, owner: undefined })),
    // A laboratory category handed to the partner is the partner's all the same.
    { state, category: 'result_delayed' as const, owner: 'partner' as const },
  ]);
  it.each(partnerExceptions)('opening a partner-owned $category exception is refused from $state and changes nothing', async ({ state, category, owner }) => {
    const { order } = await newOrder(db);
    await db.update(orders).set({ lifecycleDetail: state }).where(eq(orders.id, order.id));
    const before = await snapshot(db, order.id);
    const attempt = openException(db, { order_id: order.id, category, owner_role: owner });
    await expect(attempt).rejects.toMatchObject({ name: 'LaboratoryOperationError', kind: 'conflict' });
    await expect(attempt).rejects.toThrow(
      `cannot open a partner-owned ${category} exception on an order whose state is ${state}: the order is ${LIFECYCLE_DETAILS[state].lifecycle}, and a closed order (cancelled or completed) gives the partner nothing more to do`,
    );
    expect(await snapshot(db, order.id)).toEqual(before);
  });

  it.each(CLOSED)('from %s, every laboratory operation either is refused or leaves next_action as the state says, with no integration.action_required', async (state) => {
    const { order } = await newOrder(db);
    await db.update(orders).set({ lifecycleDetail: state }).where(eq(orders.id, order.id));
    const laboratoryOwned = await openException(db, { order_id: order.id, category: 'result_delayed' });
    const attempts: (() => Promise<unknown>)[] = [
      ...OPERATIONS.map((op) => async () => op.run(order.id, op.needsRecordedResult ? await recordedResult(db, order.id) : '')),
      () => recordResult(db, { ...resultBody(), order_id: order.id }),
      async () => flagCritical(db, { result_id: await recordedResult(db, order.id) }),
      ...CATEGORIES.flatMap((category) => [() => openException(db, { order_id: order.id, category }), () => openException(db, { order_id: order.id, category, owner_role: 'partner' })]),
      () => resolveException(db, { exception_id: laboratoryOwned.exception.exception_id, resolution_text: 'done' }),
    ];
    for (const attempt of attempts) await attempt().catch(() => undefined);
    const { order: row, exceptions, events } = await snapshot(db, order.id);
    expect((await orderResource(db, row)).next_action).toBe(LIFECYCLE_DETAILS[row.lifecycleDetail as LifecycleDetail].next_action);
    expect(exceptions.filter((e) => e.ownerRole === 'partner')).toEqual([]);
    expect(events.map((e) => e.type)).not.toContain('integration.action_required');
  });
});
