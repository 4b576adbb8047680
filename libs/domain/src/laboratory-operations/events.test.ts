import { EVENT_TYPES } from '@lop/contract';
import { afterAll, describe, expect, it } from 'vitest';
import type { OrderRow } from '../orders/order-resource';
import { acceptOrder } from './acceptance';
import { cancelByLaboratory } from './cancellation';
import { listOperatorExceptions, openException, resolveException } from './exceptions';
import type { OperationOutcome } from './operation';
import { recordResult } from './result-recording';
import { flagCritical, releaseResult } from './result-release';
import { accessionSpecimen, collectSpecimen, receiveSpecimen, rejectSpecimen, shipSpecimen } from './specimens';
import { ALLOWED_DATA_KEYS, driveTo, eventsOf, newOrder, openTestDatabase, resultBody } from '../../testing/orders';
import { acknowledgeOrder, failTransmission, transmitOrder } from './transmission';
import { testEvent } from '../webhooks/test-event';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

const ORDER_KEYS = ['order_id', 'external_order_id', 'program_id', 'client_id', 'environment', 'lifecycle', 'next_action', 'links'];
const RESULT_KEYS = [...ORDER_KEYS, 'result_id', 'result_version', 'result_provenance', 'result_is_critical'];
/** order.updated / order.cancelled of a change that settled an exception the partner owned. */
const SETTLING_KEYS = [...ORDER_KEYS, 'action_required_code'];

/** The exact data keys each event type carries (DESIGN §8): identifiers and coarse state only. */
const KEYS_BY_TYPE: Record<string, string[]> = {
  'order.updated': ORDER_KEYS,
  'order.cancelled': ORDER_KEYS,
  'specimen.updated': [...ORDER_KEYS, 'specimen_state'],
  'integration.action_required': [...ORDER_KEYS, 'action_required_code'],
  'result.partial': RESULT_KEYS,
  'result.final': RESULT_KEYS,
  'result.corrected': RESULT_KEYS,
  'result.critical': RESULT_KEYS,
};

// Values of the observations in resultBody(): none may ever appear in an event.
const OBSERVATION_TEXT = ['LDL Cholesterol', 'HDL Cholesterol', '<10', '45.0', 'mg/dL', '0-99', '>=40'];

type Step = { op: string; expect: string[]; settles?: boolean; run: () => Promise<OperationOutcome> };

/** What a partner reading only the stream knows about an order's state. */
interface PartnerView {
  lifecycle: unknown;
  next_action: unknown;
  action_required_code: unknown;
}

/**
 * Runs the steps, asserting after each: exactly the expected event types in order, the
 * outcome reports the same events the stream holds, every event's data is allow-listed, and
 * every order.updated shows the partner something new (its payload differs from what the stream
 * had already said) — an event whose payload shows nothing new is never emitted.
 */
async function walk(order: OrderRow, steps: Step[], view: PartnerView = { lifecycle: 'pending', next_action: 'wait_for_laboratory', action_required_code: 'none' }) {
  for (const step of steps) {
    const last = (await eventsOf(db, order)).at(-1)?.sequence ?? 0;
    const outcome = await step.run();
    const rows = await eventsOf(db, order, last);
    expect(rows.map((r) => r.type), step.op).toEqual(step.expect);
    expect(outcome.events.map((e) => e.event_id), step.op).toEqual(rows.map((r) => r.id));
    for (const row of rows) {
      const data = row.data as Record<string, unknown>;
      expect(EVENT_TYPES).toContain(row.type);
      const keys = step.settles && (row.type === 'order.updated' || row.type === 'order.cancelled') ? SETTLING_KEYS : KEYS_BY_TYPE[row.type];
      expect(Object.keys(data).sort(), `${step.op}: ${row.type}`).toEqual([...keys].sort());
      for (const key of Object.keys(data)) expect(ALLOWED_DATA_KEYS).toContain(key);
      // Ids are random hex: "4d20-9984" holds "0-99". A leak would be in the free text, never an id.
      const text = JSON.stringify(data).replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>');
      for (const value of OBSERVATION_TEXT) expect(text).not.toContain(value);
      expect(data.order_id).toBe(order.id);
      expect(row.programId).toBe(order.programId);
      // lifecycle and next_action are learnt from the events that announce them (order.* and
      // integration.action_required, docs/events.md); the code from any event that carries it.
      const orderLevel = row.type.startsWith('order.') || row.type === 'integration.action_required';
      const next = {
        lifecycle: orderLevel ? data.lifecycle : view.lifecycle,
        next_action: orderLevel ? data.next_action : view.next_action,
        action_required_code: data.action_required_code ?? view.action_required_code,
      };
      if (row.type === 'order.updated') expect(next, `${step.op}: order.updated shows nothing new`).not.toEqual(view);
      view = next;
    }
  }
}

describe('each laboratory operation emits exactly the events DESIGN §8 names', () => {
  it('transmission, acceptance, collection, testing and every kind of release', async () => {
    const { order } = await newOrder(db);
    const id = order.id;
    const results: string[] = [];
    const record = async (overrides: Record<string, unknown> = {}) => {
      const outcome = await recordResult(db, { ...resultBody(overrides), order_id: id });
      results.push(outcome.result.result_id);
      return outcome;
    };
    await walk(order, [
      // received → transmitted, and accepted → awaiting_collection, change only lifecycle_detail: no order.updated.
      { op: 'transmit', expect: [], run: () => transmitOrder(db, { order_id: id }) },
      { op: 'acknowledge accepted', expect: ['order.updated'], run: () => acknowledgeOrder(db, { order_id: id, status: 'accepted', external_order_ref: 'LIS-77' }) },
      { op: 'accept', expect: [], run: () => acceptOrder(db, { order_id: id }) },
      { op: 'collect', expect: ['specimen.updated', 'order.updated'], run: () => collectSpecimen(db, { order_id: id }) },
      // Still active / wait_for_results: specimen.updated (its specimen_state) is the news.
      { op: 'ship', expect: ['specimen.updated'], run: () => shipSpecimen(db, { order_id: id }) },
      { op: 'receive', expect: ['specimen.updated'], run: () => receiveSpecimen(db, { order_id: id }) },
      { op: 'accession', expect: ['specimen.updated'], run: () => accessionSpecimen(db, { order_id: id }) },
      { op: 'record (not released)', expect: [], run: () => record() },
      { op: 'release partial', expect: ['result.partial', 'order.updated'], run: () => releaseResult(db, { result_id: results[0], as: 'partial' }) },
      { op: 'record', expect: [], run: () => record() },
      // Still partial_results: no order.updated.
      { op: 'release a second partial', expect: ['result.partial'], run: () => releaseResult(db, { result_id: results[1], as: 'partial' }) },
      { op: 'record', expect: [], run: () => record() },
      { op: 'release final critical', expect: ['result.final', 'result.critical', 'order.updated'], run: () => releaseResult(db, { result_id: results[2], as: 'final', critical: true }) },
      { op: 'record', expect: [], run: () => record() },
      // final_results → corrected_results: still completed / read_results; result.corrected is the news.
      { op: 'release corrected', expect: ['result.corrected'], run: () => releaseResult(db, { result_id: results[3], as: 'corrected' }) },
      { op: 'record critical', expect: [], run: () => record({ is_critical: true }) },
      // Still corrected_results; an amendment is announced as a correction.
      { op: 'release amended (recorded critical)', expect: ['result.corrected', 'result.critical'], run: () => releaseResult(db, { result_id: results[4], as: 'amended' }) },
      { op: 'flag a released version critical later', expect: ['result.critical'], run: () => flagCritical(db, { result_id: results[0] }) },
      { op: 'flag it again', expect: [], run: () => flagCritical(db, { result_id: results[0] }) },
      { op: 'record', expect: [], run: () => record() },
      { op: 'flag an unreleased version critical', expect: [], run: () => flagCritical(db, { result_id: results[5] }) },
      { op: 'release it', expect: ['result.corrected', 'result.critical'], run: () => releaseResult(db, { result_id: results[5], as: 'corrected' }) },
      // The order is completed, so closed: a partner-owned exception is refused here (transitions.test.ts).
      { op: 'open a laboratory-owned exception', expect: [], run: () => openException(db, { order_id: id, category: 'result_delayed' }) },
    ]);

    const events = await eventsOf(db, order);
    const released = events.filter((e) => e.type.startsWith('result.'));
    for (const event of released) {
      const data = event.data as Record<string, any>;
      expect(data.result_provenance).toBe('laboratory_release');
      expect(data.links).toEqual({ order: `/v1/orders/${id}`, results: `/v1/orders/${id}/results`, result: `/v1/orders/${id}/results/${data.result_id}` });
    }
    expect(released.map((e) => [e.type, (e.data as any).result_version, (e.data as any).result_is_critical])).toEqual([
      ['result.partial', 1, false],
      ['result.partial', 2, false],
      ['result.final', 3, true],
      ['result.critical', 3, true],
      ['result.corrected', 4, false],
      ['result.corrected', 5, true],
      ['result.critical', 5, true],
      ['result.critical', 1, true],
      ['result.corrected', 6, true],
      ['result.critical', 6, true],
    ]);
    const specimenStates = events.filter((e) => e.type === 'specimen.updated').map((e) => (e.data as any).specimen_state);
    expect(specimenStates).toEqual(['collected', 'in_transit', 'received', 'accessioned']);
  });

  it('specimen rejection and recollection: collecting the replacement settles the partner exception, and the stream says so', async () => {
    const { order } = await newOrder(db);
    const id = order.id;
    await acceptOrder(db, { order_id: id });
    await walk(
      order,
      [
        { op: 'collect', expect: ['specimen.updated', 'order.updated'], run: () => collectSpecimen(db, { order_id: id }) },
        // integration.action_required already shows the new lifecycle and next_action: no order.updated repeats them.
        { op: 'reject specimen', expect: ['specimen.updated', 'integration.action_required'], run: () => rejectSpecimen(db, { order_id: id, reason: 'hemolyzed' }) },
        { op: 'collect the replacement', expect: ['specimen.updated', 'order.updated'], settles: true, run: () => collectSpecimen(db, { order_id: id }) },
      ],
      { lifecycle: 'active', next_action: 'collect_specimen', action_required_code: 'none' },
    );
    const events = await eventsOf(db, order);
    const action = events.find((e) => e.type === 'integration.action_required')!;
    expect(action.data).toMatchObject({ action_required_code: 'specimen_rejected', links: { order: `/v1/orders/${id}`, exceptions: `/v1/orders/${id}/exceptions` }, next_action: 'recollect_specimen' });
    expect(events.at(-1)!.data).toMatchObject({ action_required_code: 'none', next_action: 'wait_for_results', links: { exceptions: `/v1/orders/${id}/exceptions` } });
    expect(JSON.stringify(events.map((e) => e.data))).not.toContain('hemolyzed');
  });

  it('transmission failure is the laboratory’s to retry: nothing for the partner until the retransmitted order is accepted', async () => {
    const { order } = await newOrder(db);
    await walk(order, [
      { op: 'transmit', expect: [], run: () => transmitOrder(db, { order_id: order.id }) },
      // Laboratory-owned and retryable; still pending / wait_for_laboratory: no event shows anything new.
      { op: 'fail transmission', expect: [], run: () => failTransmission(db, { order_id: order.id, reason: 'HL7 NAK AE: segment PID-3 missing' }) },
      { op: 'retransmit', expect: [], run: () => transmitOrder(db, { order_id: order.id }) },
      { op: 'acknowledge accepted', expect: ['order.updated'], run: () => acknowledgeOrder(db, { order_id: order.id, status: 'accepted' }) },
    ]);
  });

  it('rejection by the laboratory on acknowledgement asks the partner to act; the laboratory cancelling it clears that', async () => {
    const { order } = await newOrder(db);
    await transmitOrder(db, { order_id: order.id });
    await walk(order, [
      { op: 'acknowledge rejected', expect: ['integration.action_required'], run: () => acknowledgeOrder(db, { order_id: order.id, status: 'rejected', reason: 'unknown test code' }) },
      { op: 'cancel by laboratory', expect: ['order.cancelled'], settles: true, run: () => cancelByLaboratory(db, { order_id: order.id }) },
    ]);
    expect((await eventsOf(db, order)).at(-1)!.data).toMatchObject({ lifecycle: 'cancelled', next_action: 'none', action_required_code: 'none' });
  });

  it('resolving an exception emits order.updated exactly when what the partner must act on changes', async () => {
    const { order } = await newOrder(db);
    const at = (minute: number) => new Date(Date.UTC(2025, 2, 3, 9, minute));
    const info = await openException(db, { order_id: order.id, category: 'order_information_required' }, at(0));
    const rejected = await openException(db, { order_id: order.id, category: 'specimen_rejected' }, at(1));
    const delayed = await openException(db, { order_id: order.id, category: 'collection_delayed' }, at(2));
    await walk(
      order,
      [
        { op: 'resolve the newest partner exception', expect: ['order.updated'], settles: true, run: () => resolveException(db, { exception_id: rejected.exception.exception_id, resolution_text: 'Recollected.' }) },
        { op: 'resolve the laboratory’s', expect: [], run: () => resolveException(db, { exception_id: delayed.exception.exception_id, resolution_text: 'Courier arrived.' }) },
        { op: 'open a second of the same category', expect: ['integration.action_required'], run: () => openException(db, { order_id: order.id, category: 'order_information_required' }, at(3)) },
        { op: 'resolve it: the first is still open, nothing new to say', expect: [], run: async () => resolveException(db, { exception_id: await newestOpen(order.id), resolution_text: 'Sent.' }) },
        { op: 'resolve the last partner exception', expect: ['order.updated'], settles: true, run: () => resolveException(db, { exception_id: info.exception.exception_id, resolution_text: 'Sent.' }) },
        { op: 'cancel by laboratory (nothing left to settle)', expect: ['order.cancelled'], run: () => cancelByLaboratory(db, { order_id: order.id }) },
      ],
      { lifecycle: 'pending', next_action: 'wait_for_laboratory', action_required_code: 'specimen_rejected' },
    );
    const codes = (await eventsOf(db, order)).filter((e) => e.type === 'order.updated').map((e) => (e.data as any).action_required_code);
    expect(codes).toEqual(['order_information_required', 'none']);
  });
});

describe('a test delivery', () => {
  it('carries the data fields and links a real event of its type carries (a result.* one its links.result)', async () => {
    const { order } = await newOrder(db);
    const id = order.id;
    await driveTo(db, id, 'in_testing');
    await openException(db, { order_id: id, category: 'order_information_required' });
    const recorded = await recordResult(db, { ...resultBody({ is_critical: true }), order_id: id });
    await releaseResult(db, { result_id: recorded.result.result_id, as: 'partial' });
    for (const as of ['final', 'corrected'] as const) {
      const next = await recordResult(db, { ...resultBody(), order_id: id });
      await releaseResult(db, { result_id: next.result.result_id, as });
    }
    // A completed order cannot be cancelled: order.cancelled comes from a second one.
    const cancelled = await newOrder(db);
    await cancelByLaboratory(db, { order_id: cancelled.order.id });

    const streams = [...(await eventsOf(db, order)), ...(await eventsOf(db, cancelled.order))];
    const real = new Map(streams.map((e) => [e.type, e.data as Record<string, any>]));
    expect([...real.keys()].sort()).toEqual(EVENT_TYPES.filter((t) => t !== 'order.created').sort());
    for (const [type, data] of real) {
      const test = testEvent(type as (typeof EVENT_TYPES)[number], { clientId: order.clientId, environment: 'sandbox' }, new Date()).data as Record<string, any>;
      expect(Object.keys(test).sort(), type).toEqual(Object.keys(data).sort());
      expect(Object.keys(test.links).sort(), type).toEqual(Object.keys(data.links).sort());
      if (type.startsWith('result.')) expect(test.links.result, type).toBe(`${test.links.results}/${test.result_id}`);
    }
  });
});

async function newestOpen(orderId: string): Promise<string> {
  const listed = await listOperatorExceptions(db, { order_id: orderId });
  return listed.exceptions.find((e) => e.status === 'open')!.exception_id;
}
