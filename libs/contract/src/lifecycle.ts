/**
 * The order states a partner sees (DESIGN §5). `lifecycle_detail` is the state; lifecycle and
 * next_action follow from it, by this table. Which operation moves an order from one state to
 * another is the domain's (libs/domain/src/orders/lifecycle.ts, TRANSITIONS).
 */
export const LIFECYCLE_DETAILS = {
  received: { lifecycle: 'pending', next_action: 'wait_for_laboratory' },
  transmitted: { lifecycle: 'pending', next_action: 'wait_for_laboratory' },
  // The laboratory's to retry (its exception is laboratory-owned and retryable); still not accepted.
  transmission_failed: { lifecycle: 'pending', next_action: 'wait_for_laboratory' },
  accepted: { lifecycle: 'active', next_action: 'collect_specimen' },
  awaiting_collection: { lifecycle: 'active', next_action: 'collect_specimen' },
  specimen_collected: { lifecycle: 'active', next_action: 'wait_for_results' },
  in_transit: { lifecycle: 'active', next_action: 'wait_for_results' },
  received_by_laboratory: { lifecycle: 'active', next_action: 'wait_for_results' },
  in_testing: { lifecycle: 'active', next_action: 'wait_for_results' },
  recollection_required: { lifecycle: 'active', next_action: 'recollect_specimen' },
  partial_results: { lifecycle: 'resulted', next_action: 'read_results' },
  final_results: { lifecycle: 'completed', next_action: 'read_results' },
  corrected_results: { lifecycle: 'completed', next_action: 'read_results' },
  cancelled_by_partner: { lifecycle: 'cancelled', next_action: 'none' },
  cancelled_by_laboratory: { lifecycle: 'cancelled', next_action: 'none' },
  // Final for this order: the partner reads why (order_rejected), and cancels it to close it.
  rejected_by_laboratory: { lifecycle: 'failed', next_action: 'resolve_exception' },
} as const;

export type LifecycleDetail = keyof typeof LIFECYCLE_DETAILS;

/** The coarse states, in the order an order goes through them. */
export const LIFECYCLES = ['pending', 'active', 'resulted', 'completed', 'cancelled', 'failed'] as const;
export type Lifecycle = (typeof LIFECYCLES)[number];

export const NEXT_ACTIONS = ['wait_for_laboratory', 'collect_specimen', 'wait_for_results', 'recollect_specimen', 'read_results', 'none', 'resolve_exception', 'provide_information'] as const;
export type NextAction = (typeof NEXT_ACTIONS)[number];
