import { asc, eq, sql as raw } from 'drizzle-orm';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { webhookDeliveries, webhookDeliveryAttempts } from '@lop/db';
import { eventually, newPartner, placeOrder, subscribe } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

/**
 * A job that fails for an internal reason (here: the database refuses to record the attempt's
 * result) is an internal error in the worker's log, not a retry of the partner's endpoint: the
 * attempt that reached the receiver stays in the log and is counted, and the next request waits
 * for the schedule.
 */

const errors: { msg: string; delivery_id?: string }[] = [];

const rig = useDeliveryRig('internal-failure', {
  reply: (_request, index) => ({ status: index === 0 ? 500 : 200 }),
  worker: () => ({ logger: pino({ level: 'error' }, { write: (line: string) => void errors.push(JSON.parse(line) as { msg: string; delivery_id?: string }) }) }),
  beforeClose: async () => void (await rig.database.db.execute(raw`drop trigger if exists refuse_attempt_results on webhook_delivery_attempts`)),
});
const { database } = rig;

describe('an internal failure while recording an attempt', () => {
  it('is logged as an internal error; the receiver is not called again for that attempt, which is counted as interrupted', async () => {
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, rig.receiver.url('/recorded'), ['order.created']);
    // The database refuses to record any result for this subscription's attempts (claims are inserts and pass).
    await database.db.execute(
      raw.raw(`
        create or replace function refuse_attempt_results() returns trigger language plpgsql as $$
        begin
          if exists (select 1 from webhook_deliveries d where d.id = new.delivery_id and d.subscription_id = '${subscription.subscription_id}') then
            raise exception 'injected: attempt results cannot be stored';
          end if;
          return new;
        end $$;
        create trigger refuse_attempt_results before update on webhook_delivery_attempts for each row execute function refuse_attempt_results();`),
    );
    await placeOrder(database.db, partner);
    const [delivery] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));

    await eventually(async () => expect(errors.some((e) => e.msg === 'internal error in a delivery job; job released' && e.delivery_id === delivery.id)).toBe(true), 20_000);
    expect(rig.receiver.requests).toHaveLength(1);
    // The database comes back.
    await database.db.execute(raw`drop trigger refuse_attempt_results on webhook_delivery_attempts`);

    await eventually(async () => {
      const [row] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, delivery.id));
      expect(row).toMatchObject({ state: 'delivered', attemptsMade: 2 });
    }, 45_000);
    const attempts = await database.db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, delivery.id)).orderBy(asc(webhookDeliveryAttempts.attemptNumber));
    expect(attempts.map((a) => [a.attemptNumber, a.outcome, a.errorClass])).toEqual([
      [1, 'retry', 'interrupted'],
      [2, 'delivered', null],
    ]);
    // One request per recorded attempt: the released job's runs never called the rig.receiver.
    expect(rig.receiver.requests.map((r) => r.headers['x-partner-delivery-id'])).toEqual(attempts.map((a) => a.id));
  }, 90_000);
});
