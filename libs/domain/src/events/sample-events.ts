import { EVENT_PAYLOAD_VERSION, type EventType } from '@lop/contract';
import { exceptionsPath, orderPath, resultPath, resultsPath } from '../http/resource-paths';
import { eventSchema, type PartnerEvent } from './events.schemas';

// The documents' examples and the body of a test delivery (webhooks/test-event.ts) are these samples;
// their links are built by the same paths as a real event's, so a handler sees the same shape.
const SAMPLE_ORDER_ID = '00000000-0000-4000-8000-00000000000a';
const SAMPLE_RESULT_ID = '00000000-0000-4000-8000-00000000000b';

/** A valid example of each event type (checked against the event schema when the document is built). */
export function sampleEvent(type: EventType, index: number): PartnerEvent {
  const order = {
    order_id: SAMPLE_ORDER_ID,
    external_order_id: 'ord-2024-0001',
    program_id: '00000000-0000-4000-8000-000000000001',
    client_id: '00000000-0000-4000-8000-000000000003',
    environment: 'sandbox' as const,
    lifecycle: 'active' as const,
    next_action: 'wait_for_results' as const,
    links: { order: orderPath(SAMPLE_ORDER_ID) },
  };
  const result = { result_id: SAMPLE_RESULT_ID, result_version: 1, result_provenance: 'laboratory_release', result_is_critical: type === 'result.critical' };
  // In the order a real event's links reach partners (events/append.ts).
  const resultLinks = { ...order.links, result: resultPath(SAMPLE_ORDER_ID, SAMPLE_RESULT_ID), results: resultsPath(SAMPLE_ORDER_ID) };
  const data: Record<EventType, PartnerEvent['data']> = {
    'order.created': { ...order, lifecycle: 'pending', next_action: 'wait_for_laboratory' },
    'order.updated': { ...order, lifecycle: 'active', next_action: 'collect_specimen' },
    'order.cancelled': { ...order, lifecycle: 'cancelled', next_action: 'none' },
    'specimen.updated': { ...order, specimen_state: 'collected' },
    'result.partial': { ...order, lifecycle: 'resulted', next_action: 'read_results', ...result, links: resultLinks },
    'result.final': { ...order, lifecycle: 'completed', next_action: 'read_results', ...result, result_version: 2, links: resultLinks },
    'result.corrected': { ...order, lifecycle: 'completed', next_action: 'read_results', ...result, result_version: 3, links: resultLinks },
    'result.critical': { ...order, lifecycle: 'completed', next_action: 'read_results', ...result, links: resultLinks },
    'integration.action_required': {
      ...order,
      next_action: 'recollect_specimen',
      action_required_code: 'specimen_rejected',
      links: { ...order.links, exceptions: exceptionsPath(SAMPLE_ORDER_ID) },
    },
  };
  return eventSchema.parse({
    event_id: `evt_${String(index + 1).padStart(24, '0')}`,
    type,
    version: EVENT_PAYLOAD_VERSION,
    occurred_at: '2024-05-01T12:00:00.000Z',
    environment: 'sandbox',
    program_id: order.program_id,
    sequence: index + 1,
    data: data[type],
  });
}
