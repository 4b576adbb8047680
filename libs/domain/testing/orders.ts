/**
 * The domain's own test helpers, outside src/ so no production module can reach them. Rows are
 * built directly, so each test owns its own laboratory, client and order. Not @lop/testing: that
 * library builds tenants through @lop/domain, so a domain test importing it would make the two
 * projects depend on each other.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { and, asc, eq, gt } from 'drizzle-orm';
import { afterAll, beforeAll, inject } from 'vitest';
import {
  apiClients,
  catalogItems,
  connectDatabase,
  createTestDatabase,
  events,
  laboratories,
  orderExceptions,
  orders,
  programGrants,
  programs,
  resultVersions,
  specimens,
  type Database,
  type DatabaseConnection,
  type Environment,
  type TestDatabase,
  withDatabase,
} from '@lop/db';
import { eventDataSchema } from '../src/events/events.schemas';
import type { EventDraft } from '../src/events/append';
import type { OrderRow } from '../src/orders/order-resource';
import { acceptOrder } from '../src/laboratory-operations/acceptance';
import { cancelByLaboratory } from '../src/laboratory-operations/cancellation';
import { recordResult } from '../src/laboratory-operations/result-recording';
import { releaseResult } from '../src/laboratory-operations/result-release';
import { accessionSpecimen, collectSpecimen, receiveSpecimen, rejectSpecimen, shipSpecimen } from '../src/laboratory-operations/specimens';
import { acknowledgeOrder, failTransmission, transmitOrder } from '../src/laboratory-operations/transmission';

// Provided by libs/db/src/testing/global-setup.ts.
declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/** A connection to this run's database. */
export function openTestDatabase(): DatabaseConnection {
  return connectDatabase(inject('databaseUrl'), { max: 4, applicationName: 'domain-tests' });
}

/**
 * A migrated database of the calling test file's own, for a file that detaches partitions or fills
 * and analyzes tables (no other file's rows may be in them): made before its tests, dropped after.
 * Its `db` and `sql` are there inside tests and hooks (the file's own beforeAll runs after this one).
 */
export function ownTestDatabase(label: string, options: { max?: number } = {}): Pick<DatabaseConnection, 'db' | 'sql'> {
  let database: TestDatabase | undefined;
  let connection: DatabaseConnection | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(withDatabase(inject('databaseUrl'), 'postgres'), label);
    connection = connectDatabase(database.url, { max: options.max ?? 4, applicationName: `${label}-test` });
  });
  afterAll(async () => {
    await connection?.close();
    await database?.drop();
  });
  return {
    get db() {
      return connection!.db;
    },
    get sql() {
      return connection!.sql;
    },
  };
}

const unique = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;

export interface OrderFixture {
  order: OrderRow;
  itemSpecimenType: string;
  performingLaboratory: string;
}

/** A fresh laboratory, client, program (granted to the client, as ordering requires) and test, and one order of it in state `received`. */
export async function newOrder(db: Database, environment: Environment = 'sandbox'): Promise<OrderFixture> {
  const [lab] = await db.insert(laboratories).values({ displayName: unique('Lab'), legalName: 'Lab, Inc.', operatingName: 'Lab' }).returning();
  const [client] = await db.insert(apiClients).values({ laboratoryId: lab.id, name: unique('Client') }).returning();
  const [program] = await db
    .insert(programs)
    .values({ laboratoryId: lab.id, environment, name: unique('Program'), currency: 'USD', jurisdiction: 'US' })
    .returning();
  await db.insert(programGrants).values({ clientId: client.id, programId: program.id, environment });
  const [item] = await db
    .insert(catalogItems)
    .values({
      programId: program.id,
      labOrderableId: randomUUID(),
      labTestCode: 'T1',
      code: 'T1',
      description: 'Test',
      externalCode: '80061',
      name: 'Lipid Panel',
      kind: 'panel',
      performingLaboratory: 'Central Lab, Springfield',
      specimenType: 'serum',
      container: 'SST',
      minVolumeMl: 1,
    })
    .returning();
  const [order] = await db
    .insert(orders)
    .values({
      laboratoryId: lab.id,
      clientId: client.id,
      environment,
      externalOrderId: unique('ext'),
      programId: program.id,
      itemId: item.id,
      externalSubjectId: unique('subject'),
      collection: 'in_person_draw',
      synthetic: environment === 'sandbox',
      lifecycleDetail: 'received',
    })
    .returning();
  return { order, itemSpecimenType: item.specimenType, performingLaboratory: item.performingLaboratory };
}

/** An order.updated of the order, as a laboratory operation would append it; `label` is its external_order_id. */
export function orderUpdatedDraft(order: OrderRow, label: string): EventDraft {
  return {
    type: 'order.updated',
    occurredAt: new Date(),
    orderId: order.id,
    programId: order.programId,
    data: { order_id: order.id, external_order_id: label, program_id: order.programId, client_id: order.clientId, environment: 'sandbox', lifecycle: 'active' },
  };
}

/** Events of one order, in stream order. */
export async function eventsOf(db: Database, order: OrderRow, afterSequence = 0) {
  return db
    .select()
    .from(events)
    .where(and(eq(events.clientId, order.clientId), eq(events.orderId, order.id), gt(events.sequence, afterSequence)))
    .orderBy(asc(events.sequence));
}

/** Everything an operation could touch, to prove a refused one touched nothing. */
export async function snapshot(db: Database, orderId: string) {
  const [order] = await db.select().from(orders).where(eq(orders.id, orderId));
  return {
    order,
    specimens: await db.select().from(specimens).where(eq(specimens.orderId, orderId)).orderBy(asc(specimens.id)),
    exceptions: await db.select().from(orderExceptions).where(eq(orderExceptions.orderId, orderId)).orderBy(asc(orderExceptions.id)),
    results: await db.select().from(resultVersions).where(eq(resultVersions.orderId, orderId)).orderBy(asc(resultVersions.id)),
    events: await db.select().from(events).where(eq(events.orderId, orderId)).orderBy(asc(events.sequence)),
  };
}

export const ALLOWED_DATA_KEYS = Object.keys(eventDataSchema.shape);

/** A minimal valid result file body. */
export function resultBody(overrides: Record<string, unknown> = {}) {
  return {
    source_result_id: unique('LIS-R'),
    performing_laboratory_system: 'Sunquest LIS 8',
    observations: <Record<string, string>[]>[
      { analyte: 'LDL Cholesterol', value: '<10', unit: 'mg/dL', reference_interval: '0-99', flag: 'L' },
      { analyte: 'HDL Cholesterol', value: '45.0', unit: 'mg/dL', reference_interval: '>=40' },
    ],
    ...overrides,
  };
}

/** The real operations that lead an order from `received` to each state. */
export async function driveTo(db: Database, orderId: string, state: string): Promise<void> {
  const steps: Record<string, (() => Promise<unknown>)[]> = {
    transmitted: [() => transmitOrder(db, { order_id: orderId })],
    accepted: [() => transmitOrder(db, { order_id: orderId }), () => acknowledgeOrder(db, { order_id: orderId, status: 'accepted' })],
    awaiting_collection: [() => acceptOrder(db, { order_id: orderId })],
    transmission_failed: [() => failTransmission(db, { order_id: orderId })],
    rejected_by_laboratory: [() => transmitOrder(db, { order_id: orderId }), () => acknowledgeOrder(db, { order_id: orderId, status: 'rejected' })],
    cancelled_by_laboratory: [() => cancelByLaboratory(db, { order_id: orderId })],
  };
  const collected = [() => acceptOrder(db, { order_id: orderId }), () => collectSpecimen(db, { order_id: orderId })];
  steps.specimen_collected = collected;
  steps.in_transit = [...collected, () => shipSpecimen(db, { order_id: orderId })];
  steps.received_by_laboratory = [...steps.in_transit, () => receiveSpecimen(db, { order_id: orderId })];
  steps.in_testing = [...steps.received_by_laboratory, () => accessionSpecimen(db, { order_id: orderId })];
  steps.recollection_required = [...steps.in_testing, () => rejectSpecimen(db, { order_id: orderId, reason: 'hemolyzed' })];
  const release = (as: 'partial' | 'final' | 'corrected') => async () => {
    const recorded = await recordResult(db, { ...resultBody(), order_id: orderId });
    return releaseResult(db, { result_id: recorded.result.result_id, as });
  };
  steps.partial_results = [...steps.in_testing, release('partial')];
  steps.final_results = [...steps.in_testing, release('final')];
  steps.corrected_results = [...steps.final_results, release('corrected')];
  if (state === 'received') return;
  const path = steps[state];
  if (!path) throw new Error(`no path to ${state}`);
  for (const step of path) await step();
}
