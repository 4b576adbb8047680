import { and, eq, sql } from 'drizzle-orm';
import { orders, preparedStatement, specimens, type Database, type Executor, type Transaction } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { findActiveItem } from '../catalog/catalog';
import { appendEvents } from '../webhooks/outbox';
import { conflict, notFound, PartnerError, type ErrorDetail } from '../http/errors';
import { getGrantedProgram, orderProgramGranted } from '../programs/programs';
import { checkOrderAgainstRequirements } from './order-check';
import { resolveRequirements } from '../requirements/requirements';
import type { DataProtector } from '../security/protector';
import { isSubjectLinked } from '../subjects/subjects';
import { NO_PARTNER_ACTION, openPartnerExceptionCategory, partnerActionFrom } from '../exceptions/partner-action';
import { IllegalTransitionError } from './lifecycle';
import { orderResource, toOrderResource, type OrderRow, type SpecimenRow } from './order-resource';
import type { CreateOrderBody, Order } from './orders.schemas';
import { changeOrderState, lockOrder, orderEvent } from './state-change';

const notOrderable = (details: ErrorDetail[]) =>
  new PartnerError('not_orderable', 'The order cannot be placed; details list each problem.', { details });

/** Every reason the order cannot be placed, checked against the same profile GET /requirements shows. */
async function checkOrderable(db: Executor, caller: Caller, body: CreateOrderBody): Promise<void> {
  const program = await getGrantedProgram(db, caller, body.program_id).catch((error: unknown) => {
    if (error instanceof PartnerError && error.errorCode === 'not_found') return null;
    throw error;
  });
  if (!program) throw notOrderable([{ field: 'program_id', issue: 'program_not_available', message: 'No such program is granted to this API client.' }]);

  const problems: ErrorDetail[] = [];
  if (program.status !== 'active') problems.push({ field: 'program_id', issue: 'program_inactive', message: 'The program is not active.' });
  const item = await findActiveItem(db, program.id, body.item_id);
  if (!item) problems.push({ field: 'item_id', issue: 'item_not_in_program', message: 'The test is not an active item of this program.' });
  if (!(await isSubjectLinked(db, caller, body.external_subject_id))) {
    problems.push({ field: 'external_subject_id', issue: 'subject_not_registered', message: 'Register the subject with PUT /v1/subjects/{externalSubjectId} first.' });
  }
  if (item) problems.push(...checkOrderAgainstRequirements(await resolveRequirements(db, caller, program, item, body.region), body));
  if (problems.length > 0) throw notOrderable(problems);
}

const placeholder = sql.placeholder;
const insertOrder = preparedStatement((db) =>
  db
    .insert(orders)
    .values({
      laboratoryId: placeholder('laboratoryId'),
      clientId: placeholder('clientId'),
      environment: placeholder('environment'),
      externalOrderId: placeholder('externalOrderId'),
      programId: placeholder('programId'),
      itemId: placeholder('itemId'),
      externalSubjectId: placeholder('externalSubjectId'),
      collection: placeholder('collection'),
      region: placeholder('region'),
      billingMode: placeholder('billingMode'),
      // Raw: drizzle would run a placeholder through the column's encoder, which fails on null.
      requestedCollectionAt: sql`${placeholder('requestedCollectionAt')}::timestamptz`,
      collectionLocation: placeholder('collectionLocation'),
      protectedData: placeholder('protectedData'),
      synthetic: placeholder('synthetic'),
      lifecycleDetail: 'received',
      createdAt: placeholder('now'),
      updatedAt: placeholder('now'),
    })
    .onConflictDoNothing()
    .returning()
    .prepare('insert_order'),
);

/**
 * Creates the order and its order.created event in the caller's transaction. Every read goes
 * through `tx`: a query on the pool while this transaction holds a connection would deadlock the
 * pool once as many creates run at once as it has connections.
 */
export async function createOrder(tx: Transaction, protector: DataProtector, caller: Caller, body: CreateOrderBody): Promise<Order> {
  await checkOrderable(tx, caller, body);
  const personal = { patient: body.patient, ordering_provider: body.ordering_provider, aoe_answers: body.aoe_answers, clinical_notes: body.clinical_notes };
  const hasPersonal = Object.values(personal).some((v) => v !== undefined);
  const now = new Date();
  const [order] = await insertOrder(tx).execute({
    laboratoryId: caller.laboratoryId,
    clientId: caller.clientId,
    environment: caller.environment,
    externalOrderId: body.external_order_id,
    programId: body.program_id,
    itemId: body.item_id,
    externalSubjectId: body.external_subject_id,
    collection: body.collection,
    region: body.region ?? null,
    billingMode: body.billing_mode ?? null,
    requestedCollectionAt: body.requested_collection_at ? new Date(body.requested_collection_at).toISOString() : null,
    collectionLocation: body.collection_location ?? null,
    protectedData: hasPersonal ? protector.encrypt(personal) : null,
    // Every order placed with a sandbox key is synthetic and may be simulated.
    synthetic: caller.environment === 'sandbox',
    now,
  });
  if (!order) throw conflict('duplicate_external_order_id', 'An order with this external_order_id already exists for this API client.');
  // A new order has no specimens yet (laboratory operations add them later): no query needed.
  // A new order has no exceptions yet.
  const resource = toOrderResource(order, [], NO_PARTNER_ACTION);
  // Last: appending takes the stream's counter lock, held until commit (see appendEvents).
  await appendEvents(tx, { clientId: caller.clientId, environment: caller.environment }, [orderEvent(order, 'order.created', now)]);
  return resource;
}

/** The caller's order, or 404: other clients', other environments' and ungranted programs' orders do not exist for it. */
export async function findOrderForCaller(db: Pick<Database, 'select'>, caller: Caller, orderId: string): Promise<OrderRow> {
  const [order] = await db
    .select()
    .from(orders)
    .where(
      and(eq(orders.id, orderId), eq(orders.clientId, caller.clientId), eq(orders.environment, caller.environment), eq(orders.laboratoryId, caller.laboratoryId), orderProgramGranted()),
    );
  if (!order) throw notFound('order');
  return order;
}

/** A specimen row as PostgreSQL's json_agg writes it: snake_case keys, ISO 8601 timestamps. */
interface SpecimenJson {
  id: string;
  order_id: string;
  specimen_code: string;
  specimen_type: string;
  status: string;
  accession_number: string | null;
  rejection_reason: string | null;
  collected_at: string | null;
  received_at: string | null;
  recollection_of: string | null;
  created_at: string;
}

const dateOrNull = (value: string | null) => (value === null ? null : new Date(value));

function specimenFromJson(s: SpecimenJson): SpecimenRow {
  return {
    id: s.id,
    orderId: s.order_id,
    specimenCode: s.specimen_code,
    specimenType: s.specimen_type,
    status: s.status,
    accessionNumber: s.accession_number,
    rejectionReason: s.rejection_reason,
    collectedAt: dateOrNull(s.collected_at),
    receivedAt: dateOrNull(s.received_at),
    recollectionOf: s.recollection_of,
    createdAt: new Date(s.created_at),
  };
}

/**
 * GET /v1/orders/{id} is the hottest read: the order and its specimens come back in one round
 * trip, through a prepared statement (no query building per request).
 */
const orderWithSpecimens = preparedStatement((db) =>
  db
    .select({
      order: orders,
      // Spelled out: inside a selection drizzle renders ${orders.id} unqualified, which here would mean s.id.
      specimens: sql<SpecimenJson[]>`(select coalesce(json_agg(s order by s.created_at, s.id), '[]'::json) from ${specimens} s where s.order_id = "orders"."id")`,
      // What the partner must act on, in the same round trip (exceptions/partner-action.ts).
      partnerExceptionCategory: openPartnerExceptionCategory(orders.id),
    })
    .from(orders)
    .where(
      and(
        eq(orders.id, sql.placeholder('orderId')),
        eq(orders.clientId, sql.placeholder('clientId')),
        eq(orders.environment, sql.placeholder('environment')),
        eq(orders.laboratoryId, sql.placeholder('laboratoryId')),
        orderProgramGranted(),
      ),
    )
    .prepare('partner_get_order'),
);

export async function getOrder(db: Database, caller: Caller, orderId: string): Promise<Order> {
  const [row] = await orderWithSpecimens(db).execute({ orderId, clientId: caller.clientId, environment: caller.environment, laboratoryId: caller.laboratoryId });
  if (!row) throw notFound('order');
  return toOrderResource(row.order, row.specimens.map(specimenFromJson), partnerActionFrom(row.partnerExceptionCategory));
}

/** Partner cancel: allowed where the transition table allows it (lifecycle.ts, cancel_by_partner); otherwise 409 and nothing changes. */
export async function cancelOrder(db: Database, caller: Caller, orderId: string): Promise<Order> {
  return db.transaction(async (tx) => {
    const order = await lockOrder(tx, orderId, { clientId: caller.clientId, environment: caller.environment, laboratoryId: caller.laboratoryId });
    if (!order) throw notFound('order');
    try {
      const updated = await changeOrderState(tx, order, 'cancel_by_partner', { patch: { requisitionState: order.requisitionState === 'issued' ? 'cancelled' : order.requisitionState } });
      return orderResource(tx, updated);
    } catch (error) {
      if (error instanceof IllegalTransitionError) {
        throw conflict('order_not_cancellable', `The order can no longer be cancelled: its state is ${order.lifecycleDetail}.`);
      }
      throw error;
    }
  });
}
