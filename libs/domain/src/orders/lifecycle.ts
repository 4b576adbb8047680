import { z } from 'zod';

/**
 * The order lifecycle (DESIGN §5). `lifecycle_detail` is the state; lifecycle and next_action
 * follow from it. Every change — partner cancel, laboratory operations, sandbox simulation —
 * goes through TRANSITIONS below; anything not listed is refused.
 */
export const LIFECYCLE_DETAILS = {
  received: { lifecycle: 'pending', next_action: 'wait_for_laboratory', cancellable: true },
  transmitted: { lifecycle: 'pending', next_action: 'wait_for_laboratory', cancellable: true },
  accepted: { lifecycle: 'active', next_action: 'collect_specimen', cancellable: true },
  awaiting_collection: { lifecycle: 'active', next_action: 'collect_specimen', cancellable: true },
  specimen_collected: { lifecycle: 'active', next_action: 'wait_for_results', cancellable: false },
  in_transit: { lifecycle: 'active', next_action: 'wait_for_results', cancellable: false },
  received_by_laboratory: { lifecycle: 'active', next_action: 'wait_for_results', cancellable: false },
  in_testing: { lifecycle: 'active', next_action: 'wait_for_results', cancellable: false },
  recollection_required: { lifecycle: 'active', next_action: 'recollect_specimen', cancellable: false },
  partial_results: { lifecycle: 'resulted', next_action: 'read_results', cancellable: false },
  final_results: { lifecycle: 'completed', next_action: 'read_results', cancellable: false },
  corrected_results: { lifecycle: 'completed', next_action: 'read_results', cancellable: false },
  cancelled_by_partner: { lifecycle: 'cancelled', next_action: 'none', cancellable: false },
  cancelled_by_laboratory: { lifecycle: 'cancelled', next_action: 'none', cancellable: false },
  rejected_by_laboratory: { lifecycle: 'failed', next_action: 'resolve_exception', cancellable: false },
  transmission_failed: { lifecycle: 'failed', next_action: 'resolve_exception', cancellable: false },
} as const;

export type LifecycleDetail = keyof typeof LIFECYCLE_DETAILS;
const DETAIL_VALUES = Object.keys(LIFECYCLE_DETAILS) as [LifecycleDetail, ...LifecycleDetail[]];

export const lifecycleDetailSchema = z.enum(DETAIL_VALUES).meta({ id: 'LifecycleDetail', description: 'The precise state of the order.' });
export const lifecycleSchema = z.enum(['pending', 'active', 'resulted', 'completed', 'cancelled', 'failed']).meta({ id: 'Lifecycle' });
export const nextActionSchema = z
  .enum(['wait_for_laboratory', 'collect_specimen', 'wait_for_results', 'recollect_specimen', 'read_results', 'none', 'resolve_exception'])
  .meta({ id: 'NextAction', description: 'What should happen next, and by whom.' });
export type Lifecycle = z.infer<typeof lifecycleSchema>;
export type NextAction = z.infer<typeof nextActionSchema>;

export const requisitionStateSchema = z.enum(['not_issued', 'issued', 'cancelled']).meta({ id: 'RequisitionState' });
export const specimenStatusSchema = z.enum(['collected', 'in_transit', 'received', 'accessioned', 'rejected']).meta({ id: 'SpecimenStatus' });
export const transmissionStatusSchema = z.enum(['not_sent', 'sent', 'failed']).meta({ id: 'TransmissionStatus' });
export const ackStatusSchema = z.enum(['not_requested', 'pending', 'accepted', 'rejected']).meta({ id: 'AckStatus' });

/** Operations that move an order, with the states they may start from and the state they lead to. */
export const TRANSITIONS = {
  transmit: { from: ['received'], to: 'transmitted' },
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
  cancel_by_partner: { from: ['received', 'transmitted', 'accepted', 'awaiting_collection'], to: 'cancelled_by_partner' },
  cancel_by_laboratory: {
    from: ['received', 'transmitted', 'accepted', 'awaiting_collection', 'specimen_collected', 'in_transit', 'received_by_laboratory', 'in_testing', 'recollection_required'],
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

export function describeState(detail: LifecycleDetail): { lifecycle: Lifecycle; next_action: NextAction; lifecycle_detail: LifecycleDetail } {
  const { lifecycle, next_action } = LIFECYCLE_DETAILS[detail];
  return { lifecycle, next_action, lifecycle_detail: detail };
}
