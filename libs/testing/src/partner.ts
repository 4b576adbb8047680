import { randomBytes } from 'node:crypto';
import { EVENT_TYPES, type EventType } from '@lop/contract';
import { subjects, type Database, type Sql } from '@lop/db';
import {
  authenticate,
  createOrder,
  createSubscription,
  DataProtector,
  loadConfig,
  type Caller,
  type Config,
  type Resolver,
} from '@lop/domain';
import { fixtures, unique } from './tenant';

/** Worker configuration for tests: loopback receivers allowed, tiny delays, quick polling. */
export function workerConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PARTNER_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
    PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS: '0.05,0.05,0.05,0.05,0.05,0.05',
    PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '1',
    PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS: '0.5',
    ...env,
  });
}
export const TEST_ENCRYPTION_KEY = randomBytes(32).toString('base64');
export const testProtector = () => new DataProtector(Buffer.from(TEST_ENCRYPTION_KEY, 'base64'));

export interface Partner {
  clientId: string;
  caller: Caller;
  key: string;
  programId: string;
  itemId: string;
  subject: string;
}

/** A fresh laboratory and API client with a sandbox program, an item, a key and a subject. */
export async function newPartner(db: Database, sql: Sql): Promise<Partner> {
  const f = fixtures(db);
  // A laboratory of its own: other files in the same run count the demo laboratory's programs.
  const laboratory = await f.laboratory();
  const client = await f.client(laboratory.id, unique('Webhook Partner'));
  const program = await f.program(laboratory.id, { collectionMethods: ['in_person_draw'] });
  const item = await f.item(program.id);
  await f.grant(client.client_id, program);
  const key = await f.key(client.client_id, 'sandbox');
  const caller = await authenticate(sql, `Bearer ${key}`);
  const subject = unique('subject');
  await db.insert(subjects).values({ clientId: caller.clientId, environment: caller.environment, externalSubjectId: subject });
  return { clientId: client.client_id, caller, key, programId: program.id, itemId: item.id, subject };
}

export function subscribe(db: Database, partner: Partner, url: string, eventTypes: EventType[] | 'all' = 'all', resolve?: Resolver) {
  return createSubscription(
    db,
    testProtector(),
    { clientId: partner.clientId, environment: 'sandbox', url, eventTypes: eventTypes === 'all' ? [...EVENT_TYPES] : eventTypes },
    { allowLoopback: true, servicePorts: [], resolve },
  );
}

/** Places an order through the domain, in its own transaction (what POST /v1/orders does). */
export function placeOrder(db: Database, partner: Partner) {
  return db.transaction((tx) =>
    createOrder(tx, testProtector(), partner.caller, {
      external_order_id: unique('ext'),
      program_id: partner.programId,
      item_id: partner.itemId,
      external_subject_id: partner.subject,
      collection: 'in_person_draw',
    } as Parameters<typeof createOrder>[3]),
  );
}

/** Retries `check` until it stops throwing (assertions about rows a worker writes a moment later). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
