import { afterAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../events/events.schemas';
import type { OrderRow } from '../orders/order-resource';
import { acceptOrder } from './acceptance';
import { cancelByLaboratory } from './cancellation';
import { openException, resolveException } from './exceptions';
import type { OperationOutcome } from './operation';
import { recordResult } from './result-recording';
import { flagCritical, releaseResult } from './result-release';
import { accessionSpecimen, collectSpecimen, receiveSpecimen, rejectSpecimen, shipSpecimen } from './specimens';
import { ALLOWED_DATA_KEYS, eventsOf, newOrder, openTestDatabase, resultBody } from './test-support';
import { acknowledgeOrder, failTransmission, transmitOrder } from './transmission';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

const ORDER_KEYS = ['order_id', 'external_order_id', 'program_id', 'client_id', 'environment', 'lifecycle', 'next_action', 'links'];
const RESULT_KEYS = [...ORDER_KEYS, 'result_id', 'result_version', 'result_provenance', 'result_is_critical'];

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

type Step = { op: string; expect: string[]; run: () => Promise<OperationOutcome> };

/**
 * Runs the steps, asserting after each: exactly the expected event types in order, the
 * outcome reports the same events the stream holds, and every event's data is allow-listed.
 */
async function walk(order: OrderRow, steps: Step[]) {
  for (const step of steps) {
    const last = (await eventsOf(db, order)).at(-1)?.sequence ?? 0;
    const outcome = await step.run();
    const rows = await eventsOf(db, order, last);
    expect(rows.map((r) => r.type), step.op).toEqual(step.expect);
    expect(outcome.events.map((e) => e.event_id), step.op).toEqual(rows.map((r) => r.id));
    for (const row of rows) {
      const data = row.data as Record<string, unknown>;
      expect(EVENT_TYPES).toContain(row.type);
      expect(Object.keys(data).sort(), `${step.op}: ${row.type}`).toEqual([...KEYS_BY_TYPE[row.type]].sort());
      for (const key of Object.keys(data)) expect(ALLOWED_DATA_KEYS).toContain(key);
      const text = JSON.stringify(data);
      for (const value of OBSERVATION_TEXT) expect(text).not.toContain(value);
      expect(data.order_id).toBe(order.id);
      expect(row.programId).toBe(order.programId);
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
      { op: 'transmit', expect: ['order.updated'], run: () => transmitOrder(db, { order_id: id }) },
      { op: 'acknowledge accepted', expect: ['order.updated'], run: () => acknowledgeOrder(db, { order_id: id, status: 'accepted', external_order_ref: 'LIS-77' }) },
      { op: 'accept', expect: ['order.updated'], run: () => acceptOrder(db, { order_id: id }) },
      { op: 'collect', expect: ['specimen.updated', 'order.updated'], run: () => collectSpecimen(db, { order_id: id }) },
      { op: 'ship', expect: ['specimen.updated', 'order.updated'], run: () => shipSpecimen(db, { order_id: id }) },
      { op: 'receive', expect: ['specimen.updated', 'order.updated'], run: () => receiveSpecimen(db, { order_id: id }) },
      { op: 'accession', expect: ['specimen.updated', 'order.updated'], run: () => accessionSpecimen(db, { order_id: id }) },
      { op: 'record (not released)', expect: [], run: () => record() },
      { op: 'release partial', expect: ['result.partial', 'order.updated'], run: () => releaseResult(db, { result_id: results[0], as: 'partial' }) },
      { op: 'record', expect: [], run: () => record() },
      // Still partial_results: no order.updated.
      { op: 'release a second partial', expect: ['result.partial'], run: () => releaseResult(db, { result_id: results[1], as: 'partial' }) },
      { op: 'record', expect: [], run: () => record() },
      { op: 'release final critical', expect: ['result.final', 'result.critical', 'order.updated'], run: () => releaseResult(db, { result_id: results[2], as: 'final', critical: true }) },
      { op: 'record', expect: [], run: () => record() },
      { op: 'release corrected', expect: ['result.corrected', 'order.updated'], run: () => releaseResult(db, { result_id: results[3], as: 'corrected' }) },
      { op: 'record critical', expect: [], run: () => record({ is_critical: true }) },
      // Still corrected_results; an amendment is announced as a correction.
      { op: 'release amended (recorded critical)', expect: ['result.corrected', 'result.critical'], run: () => releaseResult(db, { result_id: results[4], as: 'amended' }) },
      { op: 'flag a released version critical later', expect: ['result.critical'], run: () => flagCritical(db, { result_id: results[0] }) },
      { op: 'flag it again', expect: [], run: () => flagCritical(db, { result_id: results[0] }) },
      { op: 'record', expect: [], run: () => record() },
      { op: 'flag an unreleased version critical', expect: [], run: () => flagCritical(db, { result_id: results[5] }) },
      { op: 'release it', expect: ['result.corrected', 'result.critical'], run: () => releaseResult(db, { result_id: results[5], as: 'corrected' }) },
      { op: 'open a laboratory-owned exception', expect: [], run: () => openException(db, { order_id: id, category: 'result_delayed' }) },
      { op: 'open a partner-owned exception', expect: ['integration.action_required'], run: () => openException(db, { order_id: id, category: 'order_information_required' }) },
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

  it('specimen rejection and recollection', async () => {
    const { order } = await newOrder(db);
    const id = order.id;
    await acceptOrder(db, { order_id: id });
    await walk(order, [
      { op: 'collect', expect: ['specimen.updated', 'order.updated'], run: () => collectSpecimen(db, { order_id: id }) },
      { op: 'reject specimen', expect: ['specimen.updated', 'integration.action_required', 'order.updated'], run: () => rejectSpecimen(db, { order_id: id, reason: 'hemolyzed' }) },
      { op: 'collect the replacement', expect: ['specimen.updated', 'order.updated'], run: () => collectSpecimen(db, { order_id: id }) },
    ]);
    const events = await eventsOf(db, order);
    const action = events.find((e) => e.type === 'integration.action_required')!;
    expect(action.data).toMatchObject({ action_required_code: 'specimen_rejected', links: { order: `/v1/orders/${id}`, exceptions: `/v1/orders/${id}/exceptions` }, next_action: 'recollect_specimen' });
    expect(JSON.stringify(events.map((e) => e.data))).not.toContain('hemolyzed');
  });

  it('transmission failure', async () => {
    const { order } = await newOrder(db);
    await walk(order, [
      { op: 'transmit', expect: ['order.updated'], run: () => transmitOrder(db, { order_id: order.id }) },
      { op: 'fail transmission', expect: ['integration.action_required', 'order.updated'], run: () => failTransmission(db, { order_id: order.id, reason: 'HL7 NAK AE: segment PID-3 missing' }) },
    ]);
    const [action] = (await eventsOf(db, order)).filter((e) => e.type === 'integration.action_required');
    expect(action.data).toMatchObject({ action_required_code: 'transmission_failed', lifecycle: 'failed', next_action: 'resolve_exception' });
  });

  it('rejection by the laboratory on acknowledgement', async () => {
    const { order } = await newOrder(db);
    await transmitOrder(db, { order_id: order.id });
    await walk(order, [
      { op: 'acknowledge rejected', expect: ['integration.action_required', 'order.updated'], run: () => acknowledgeOrder(db, { order_id: order.id, status: 'rejected', reason: 'unknown test code' }) },
    ]);
  });

  it('cancellation by the laboratory and exception resolution', async () => {
    const { order } = await newOrder(db);
    const opened = await openException(db, { order_id: order.id, category: 'order_information_required' });
    await walk(order, [
      { op: 'resolve', expect: [], run: () => resolveException(db, { exception_id: opened.exception.exception_id, resolution_text: 'Partner sent the missing data.' }) },
      { op: 'cancel by laboratory', expect: ['order.cancelled'], run: () => cancelByLaboratory(db, { order_id: order.id }) },
    ]);
  });
});
