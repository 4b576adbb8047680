/** The partner event types, in the spec's order (contract/rest-routes.test.ts checks them against the API's). */
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
