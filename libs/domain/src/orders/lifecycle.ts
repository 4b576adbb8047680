import { LIFECYCLE_DETAILS, type Lifecycle, type LifecycleDetail, type NextAction } from '@lop/contract';
import { nextActionOf, type PartnerAction } from '../exceptions/partner-action';

/*
 * The order lifecycle (DESIGN §5). The states and what each means for lifecycle and next_action
 * are published vocabulary (@lop/contract); how an order moves between them is this file's.
 * Every change — partner cancel, laboratory operations, sandbox simulation — goes through
 * TRANSITIONS below; anything not listed is refused. No state is a dead end: every state that is
 * not closed (cancelled or completed, isClosed) has a way out — the laboratory moves it on, or
 * the partner may cancel it.
 */

/** Operations that move an order, with the states they may start from and the state they lead to. */
export const TRANSITIONS = {
  // From transmission_failed this is the laboratory's retry; it resolves the transmission_failed exception.
  transmit: { from: ['received', 'transmission_failed'], to: 'transmitted' },
  acknowledge_accepted: { from: ['transmitted'], to: 'accepted' },
  acknowledge_rejected: { from: ['transmitted'], to: 'rejected_by_laboratory' },
  fail_transmission: { from: ['received', 'transmitted'], to: 'transmission_failed' },
  accept: { from: ['received', 'accepted'], to: 'awaiting_collection' },
  collect: { from: ['accepted', 'awaiting_collection', 'recollection_required'], to: 'specimen_collected' },
  ship: { from: ['specimen_collected'], to: 'in_transit' },
  receive: { from: ['specimen_collected', 'in_transit'], to: 'received_by_laboratory' },
  accession: { from: ['received_by_laboratory'], to: 'in_testing' },
  reject_specimen: { from: ['specimen_collected', 'in_transit', 'received_by_laboratory', 'in_testing'], to: 'recollection_required' },
  release_partial: { from: ['in_testing', 'partial_results'], to: 'partial_results' },
  release_final: { from: ['in_testing', 'partial_results'], to: 'final_results' },
  release_correction: { from: ['final_results', 'corrected_results'], to: 'corrected_results' },
  // Cancelling closes the order and resolves its open exceptions (state-change.ts).
  cancel_by_partner: { from: ['received', 'transmitted', 'transmission_failed', 'accepted', 'awaiting_collection', 'rejected_by_laboratory'], to: 'cancelled_by_partner' },
  cancel_by_laboratory: {
    from: [
      'received',
      'transmitted',
      'transmission_failed',
      'accepted',
      'awaiting_collection',
      'specimen_collected',
      'in_transit',
      'received_by_laboratory',
      'in_testing',
      'recollection_required',
      'rejected_by_laboratory',
    ],
    to: 'cancelled_by_laboratory',
  },
} as const satisfies Record<string, { from: readonly LifecycleDetail[]; to: LifecycleDetail }>;

export type Transition = keyof typeof TRANSITIONS;

export class IllegalTransitionError extends Error {
  override name = 'IllegalTransitionError';
  constructor(
    readonly transition: Transition,
    readonly current: LifecycleDetail,
  ) {
    super(`cannot ${transition.replace(/_/g, ' ')} an order whose state is ${current} (allowed from: ${TRANSITIONS[transition].from.join(', ')})`);
  }
}

/** The state after `transition`, or IllegalTransitionError. */
export function nextState(current: LifecycleDetail, transition: Transition): LifecycleDetail {
  const rule = TRANSITIONS[transition];
  if (!(rule.from as readonly LifecycleDetail[]).includes(current)) throw new IllegalTransitionError(transition, current);
  return rule.to;
}

/**
 * A closed order (DESIGN §5: cancelled or completed) stays closed: no laboratory operation may
 * give the partner something to do on it. Transitions out of it are already absent from the table;
 * this names the rule for what the table cannot see, a partner-owned exception (laboratory-operations/exceptions.ts).
 */
export function isClosed(detail: LifecycleDetail): boolean {
  const { lifecycle } = LIFECYCLE_DETAILS[detail];
  return lifecycle === 'cancelled' || lifecycle === 'completed';
}

/** Whether POST …/cancel succeeds from `detail`: read from the transition table, never kept twice. */
export function partnerCanCancel(detail: LifecycleDetail): boolean {
  return (TRANSITIONS.cancel_by_partner.from as readonly LifecycleDetail[]).includes(detail);
}

/**
 * The order event a change of state implies. Events carry coarse state only (lifecycle and
 * next_action; lifecycle_detail is not an allowed event field), so a change that leaves both as
 * they were implies none: the partner would receive an event whose payload shows nothing new.
 * `alongside` are the change's own events, emitted before it: an integration.action_required
 * among them already announces the new lifecycle and next_action (docs/events.md), so no
 * order.updated follows it to repeat them.
 */
export function orderEventFor(from: LifecycleDetail, to: LifecycleDetail, alongside: readonly string[] = []): 'order.updated' | 'order.cancelled' | null {
  const before = LIFECYCLE_DETAILS[from];
  const after = LIFECYCLE_DETAILS[to];
  if (after.lifecycle === 'cancelled' && before.lifecycle !== 'cancelled') return 'order.cancelled';
  if (alongside.includes('integration.action_required')) return null;
  return before.lifecycle !== after.lifecycle || before.next_action !== after.next_action ? 'order.updated' : null;
}

/**
 * What the partner reads of the order's state. next_action is the state's unless the partner owns
 * an open exception (`partner`, read with partner-action.ts): the one rule, nextActionOf.
 */
export function describeState(detail: LifecycleDetail, partner: PartnerAction): { lifecycle: Lifecycle; next_action: NextAction; lifecycle_detail: LifecycleDetail } {
  const state = LIFECYCLE_DETAILS[detail];
  return { lifecycle: state.lifecycle, next_action: nextActionOf(state.next_action, partner), lifecycle_detail: detail };
}
