import type { EventType, LifecycleDetail } from '@lop/contract';
import { and, count, desc, eq } from 'drizzle-orm';
import { catalogItems, resultVersions, type Database } from '@lop/db';
import { EXCEPTION_CATEGORIES, type ExceptionCategory } from '../exceptions/exceptions.schemas';
import { acceptOrder } from '../laboratory-operations/acceptance';
import { cancelByLaboratory } from '../laboratory-operations/cancellation';
import type { ReleaseAs } from '../laboratory-operations/laboratory-operations.schemas';
import { LaboratoryOperationError, type OperationOutcome } from '../laboratory-operations/operation';
import { recordResult } from '../laboratory-operations/result-recording';
import { releaseResult } from '../laboratory-operations/result-release';
import { accessionSpecimen, collectSpecimen, receiveSpecimen, rejectSpecimen, shipSpecimen } from '../laboratory-operations/specimens';
import { acknowledgeOrder, failTransmission, transmitOrder } from '../laboratory-operations/transmission';
import { TRANSITIONS, type Transition } from '../orders/lifecycle';
import type { OrderRow } from '../orders/order-resource';
import { syntheticResult, type SyntheticResultKind } from './synthetic-results';

/**
 * The laboratory operations a scenario step can name, each with
 *  - `expect`: what the operation does to the order's state and which events it emits besides the
 *    lifecycle event (order.updated / order.cancelled, emitted when the state changes). Scenarios
 *    list their events from this, walked through the ONE transition table; the sandbox tests check
 *    that it equals what the operations really append to the stream.
 *  - `run`: the very laboratory operation a real laboratory update goes through.
 */

export interface StepArgs {
  transmit: Record<string, never>;
  acknowledge: { status: 'accepted' | 'rejected'; reason?: string };
  fail_transmission: { reason: string };
  accept: Record<string, never>;
  collect: Record<string, never>;
  ship: Record<string, never>;
  receive: Record<string, never>;
  accession: Record<string, never>;
  reject_specimen: { reason: string };
  record_result: { content: SyntheticResultKind; report?: boolean };
  release_result: { as: ReleaseAs };
  cancel_by_laboratory: Record<string, never>;
}
export type StepOperation = keyof StepArgs;

/** What a scenario's model knows between steps (the real state lives in the database). */
export interface ModelState {
  detail: LifecycleDetail;
  /** The version recorded and not yet released, if any. */
  recorded: { critical: boolean } | null;
}

export interface StepExpectation {
  /** The transition the operation applies, if it moves the order. */
  transition?: Transition;
  /** Events emitted before the lifecycle event, in order. */
  events: EventType[];
  recorded?: ModelState['recorded'];
  /** Why the step cannot apply from this state (besides a transition the table refuses). */
  refusal?: string;
}

export interface StepRunContext {
  db: Database;
  order: OrderRow;
}

interface OperationDefinition<K extends StepOperation> {
  expect(state: ModelState, args: StepArgs[K]): StepExpectation;
  run(context: StepRunContext, args: StepArgs[K]): Promise<OperationOutcome>;
}

const RELEASES: Record<ReleaseAs, { transition: Transition; event: EventType }> = {
  partial: { transition: 'release_partial', event: 'result.partial' },
  final: { transition: 'release_final', event: 'result.final' },
  corrected: { transition: 'release_correction', event: 'result.corrected' },
  amended: { transition: 'release_correction', event: 'result.corrected' },
};

/** A result can be recorded in the states some release can start from. */
const RECORDABLE_FROM = new Set<LifecycleDetail>([...TRANSITIONS.release_partial.from, ...TRANSITIONS.release_final.from, ...TRANSITIONS.release_correction.from]);

const specimenStep = (transition: Transition): StepExpectation => ({ transition, events: ['specimen.updated'] });

/** The event opening an exception of `category` emits: integration.action_required only when the partner owns it. */
const opening = (category: ExceptionCategory): EventType[] => (EXCEPTION_CATEGORIES[category].owner_role === 'partner' ? ['integration.action_required'] : []);

async function latestRecordedResult(db: Database, orderId: string): Promise<string> {
  const [row] = await db
    .select({ id: resultVersions.id })
    .from(resultVersions)
    .where(and(eq(resultVersions.orderId, orderId), eq(resultVersions.status, 'recorded')))
    .orderBy(desc(resultVersions.createdAt), desc(resultVersions.id))
    .limit(1);
  if (!row) throw new LaboratoryOperationError('conflict', `order ${orderId} has no recorded result to release`);
  return row.id;
}

export const STEP_OPERATIONS: { [K in StepOperation]: OperationDefinition<K> } = {
  transmit: {
    expect: () => ({ transition: 'transmit', events: [] }),
    run: ({ db, order }) => transmitOrder(db, { order_id: order.id }),
  },
  acknowledge: {
    expect: (_state, args) =>
      args.status === 'accepted' ? { transition: 'acknowledge_accepted', events: [] } : { transition: 'acknowledge_rejected', events: opening('order_rejected') },
    run: ({ db, order }, args) => acknowledgeOrder(db, { order_id: order.id, status: args.status, reason: args.reason }),
  },
  fail_transmission: {
    expect: () => ({ transition: 'fail_transmission', events: opening('transmission_failed') }),
    run: ({ db, order }, args) => failTransmission(db, { order_id: order.id, reason: args.reason, source_exception_type: 'interface_timeout', source_adapter_key: 'sandbox' }),
  },
  accept: {
    expect: () => ({ transition: 'accept', events: [] }),
    run: ({ db, order }) => acceptOrder(db, { order_id: order.id }),
  },
  collect: {
    expect: () => specimenStep('collect'),
    run: ({ db, order }) => collectSpecimen(db, { order_id: order.id }),
  },
  ship: {
    expect: () => specimenStep('ship'),
    run: ({ db, order }) => shipSpecimen(db, { order_id: order.id }),
  },
  receive: {
    expect: () => specimenStep('receive'),
    run: ({ db, order }) => receiveSpecimen(db, { order_id: order.id }),
  },
  accession: {
    expect: () => specimenStep('accession'),
    run: ({ db, order }) => accessionSpecimen(db, { order_id: order.id, source_system: 'sandbox_laboratory_simulator' }),
  },
  reject_specimen: {
    expect: () => ({ transition: 'reject_specimen', events: ['specimen.updated', ...opening('specimen_rejected')] }),
    run: ({ db, order }, args) => rejectSpecimen(db, { order_id: order.id, reason: args.reason }),
  },
  record_result: {
    expect: (state, args) => ({
      events: [],
      recorded: { critical: args.content === 'critical' },
      refusal: RECORDABLE_FROM.has(state.detail) ? undefined : `a result cannot be recorded while the order is ${state.detail}`,
    }),
    async run({ db, order }, args) {
      const [item] = await db.select({ code: catalogItems.code, name: catalogItems.name }).from(catalogItems).where(eq(catalogItems.id, order.itemId));
      const [{ versions }] = await db.select({ versions: count() }).from(resultVersions).where(eq(resultVersions.orderId, order.id));
      const body = syntheticResult(
        { itemCode: item.code, itemName: item.name, externalOrderId: order.externalOrderId, orderId: order.id, sequence: versions + 1 },
        args.content,
        args.report === true,
      );
      return recordResult(db, { order_id: order.id, ...body });
    },
  },
  release_result: {
    expect: (state, args) => ({
      transition: RELEASES[args.as].transition,
      events: [RELEASES[args.as].event, ...(state.recorded?.critical ? (['result.critical'] as const) : [])],
      recorded: null,
      refusal: state.recorded ? undefined : 'no recorded result is waiting to be released',
    }),
    run: async ({ db, order }, args) => releaseResult(db, { result_id: await latestRecordedResult(db, order.id), as: args.as, provenance: 'sandbox_simulation' }),
  },
  cancel_by_laboratory: {
    expect: () => ({ transition: 'cancel_by_laboratory', events: [] }),
    run: ({ db, order }) => cancelByLaboratory(db, { order_id: order.id }),
  },
};

/** A step of any operation: what `expect` and `run` of that operation take. */
export interface AnyStep {
  operation: StepOperation;
  args: StepArgs[StepOperation];
}

// One place where a step's operation picks its definition; each definition is typed by its own args.
const definitionOf = (operation: StepOperation) => STEP_OPERATIONS[operation] as unknown as OperationDefinition<any>;

export function expectStep(state: ModelState, step: AnyStep): StepExpectation {
  return definitionOf(step.operation).expect(state, step.args);
}

export function runStep(context: StepRunContext, step: AnyStep): Promise<OperationOutcome> {
  return definitionOf(step.operation).run(context, step.args);
}
