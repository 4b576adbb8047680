/** Exactly the spec's nine event types, in the spec's order, no others. */
export const EVENT_TYPES = [
  'order.created',
  'order.updated',
  'order.cancelled',
  'specimen.updated',
  'result.partial',
  'result.final',
  'result.corrected',
  'result.critical',
  'integration.action_required',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
