import { afterAll, describe, expect, it } from 'vitest';
import { acceptOrder } from './acceptance';
import { cancelByLaboratory } from './cancellation';
import { openException } from './exceptions';
import type { OperationOutcome } from './operation';
import { recordResult } from './result-recording';
import { flagCritical, releaseResult } from './result-release';
import { accessionSpecimen, collectSpecimen, receiveSpecimen, rejectSpecimen, shipSpecimen } from './specimens';
import { eventsOf, newOrder, openTestDatabase, resultBody, snapshot } from '../../testing/orders';
import { acknowledgeOrder, transmitOrder } from './transmission';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

/** Minutes after a fixed moment: each operation is recorded at its own, distinct time. */
const T0 = Date.UTC(2026, 10, 20, 9, 0);
const at = (minutes: number) => new Date(T0 + minutes * 60_000);
const iso = (date: Date) => date.toISOString();

/** The occurred_at of every event an operation emitted, read back from the stream's rows. */
async function occurredAtOf(outcome: OperationOutcome): Promise<string[]> {
  const ids = new Set(outcome.events.map((e) => e.event_id));
  const rows = (await eventsOf(db, (await snapshot(db, outcome.order.order_id)).order)).filter((r) => ids.has(r.id));
  expect(rows.map((r) => r.id)).toEqual(outcome.events.map((e) => e.event_id));
  return rows.map((r) => iso(r.occurredAt));
}

describe('occurred_at is when the fact happened (spec: "when the underlying fact happened")', () => {
  it('collect and receive take the time the laboratory reports; an operation without one occurs when it is recorded', async () => {
    const { order } = await newOrder(db);
    const id = order.id;
    // Reported times earlier than the operations before them: the stream's order is `sequence`, not occurred_at.
    const collectedAt = '2026-11-20T08:00:00.000Z';
    const receivedAt = '2026-11-20T08:30:00.000Z';
    const steps: [string, () => Promise<OperationOutcome>, string][] = [
      ['transmit', () => transmitOrder(db, { order_id: id }, at(1)), iso(at(1))],
      ['acknowledge', () => acknowledgeOrder(db, { order_id: id, status: 'accepted' }, at(2)), iso(at(2))],
      ['accept', () => acceptOrder(db, { order_id: id }, at(3)), iso(at(3))],
      ['collect at a reported time', () => collectSpecimen(db, { order_id: id, collected_at: '2026-11-20T08:00Z' }, at(4)), collectedAt],
      ['ship', () => shipSpecimen(db, { order_id: id }, at(5)), iso(at(5))],
      ['receive at a reported time', () => receiveSpecimen(db, { order_id: id, received_at: '2026-11-20T09:30:00+01:00' }, at(6)), receivedAt],
      ['accession', () => accessionSpecimen(db, { order_id: id }, at(7)), iso(at(7))],
    ];
    const emitted: { step: string; occurredAt: string[] }[] = [];
    for (const [step, run, expected] of steps) {
      const occurredAt = await occurredAtOf(await run());
      for (const value of occurredAt) expect(value, step).toBe(expected);
      emitted.push({ step, occurredAt });
    }
    expect(emitted.find((e) => e.step === 'collect at a reported time')!.occurredAt.length).toBeGreaterThanOrEqual(2);

    const recorded = await recordResult(db, { ...resultBody(), order_id: id }, at(8));
    const released = await releaseResult(db, { result_id: recorded.result.result_id, as: 'final' }, at(9));
    expect(released.result.released_at).toBe(iso(at(9)));
    for (const value of await occurredAtOf(released)) expect(value, 'release').toBe(released.result.released_at);
    const flagged = await flagCritical(db, { result_id: recorded.result.result_id }, at(10));
    expect(await occurredAtOf(flagged)).toEqual([iso(at(10))]);

    // The stored facts carry the same times the events do.
    const { order: row, specimens } = await snapshot(db, id);
    expect(iso(specimens[0].collectedAt!)).toBe(collectedAt);
    expect(iso(specimens[0].receivedAt!)).toBe(receivedAt);
    expect(iso(row.receivedAt!)).toBe(receivedAt);
    expect(iso(row.accessionedAt!)).toBe(iso(at(7)));

    // sequence alone orders the stream: occurred_at goes back at the collection.
    const stream = await eventsOf(db, order);
    const sequences = stream.map((e) => Number(e.sequence));
    expect([...sequences].sort((a, b) => a - b)).toEqual(sequences);
    const times = stream.map((e) => e.occurredAt.getTime());
    expect(times.some((time, i) => i > 0 && time < times[i - 1])).toBe(true);
  });

  it('rejection, a laboratory exception and a laboratory cancellation occur when recorded', async () => {
    const { order } = await newOrder(db);
    const id = order.id;
    await acceptOrder(db, { order_id: id }, at(1));
    await collectSpecimen(db, { order_id: id, collected_at: iso(at(0)) }, at(2));
    for (const value of await occurredAtOf(await rejectSpecimen(db, { order_id: id, reason: 'hemolyzed' }, at(3)))) expect(value).toBe(iso(at(3)));
    const opened = await openException(db, { order_id: id, category: 'order_information_required' }, at(4));
    expect(opened.exception.opened_at).toBe(iso(at(4)));
    for (const value of await occurredAtOf(opened)) expect(value).toBe(iso(at(4)));
    const cancelled = await cancelByLaboratory(db, { order_id: id }, at(5));
    expect((await occurredAtOf(cancelled)).length).toBeGreaterThan(0);
    for (const value of await occurredAtOf(cancelled)) expect(value).toBe(iso(at(5)));
  });

  it('a reported time in the future, or a receipt before the collection, is refused and changes nothing', async () => {
    const { order } = await newOrder(db);
    const id = order.id;
    await acceptOrder(db, { order_id: id }, at(1));
    let before = await snapshot(db, id);
    await expect(collectSpecimen(db, { order_id: id, collected_at: iso(at(60)) }, at(2))).rejects.toMatchObject({
      kind: 'invalid',
      message: `collected_at ${iso(at(60))} is in the future (now ${iso(at(2))}): report when it happened`,
    });
    expect(await snapshot(db, id)).toEqual(before);
    // A laboratory clock a few minutes ahead is not a future fact.
    await collectSpecimen(db, { order_id: id, collected_at: iso(at(4)) }, at(2));

    before = await snapshot(db, id);
    await expect(receiveSpecimen(db, { order_id: id, received_at: iso(at(3)) }, at(5))).rejects.toMatchObject({
      kind: 'invalid',
      message: `received_at ${iso(at(3))} is before the specimen was collected (${iso(at(4))})`,
    });
    expect(await snapshot(db, id)).toEqual(before);
  });
});
