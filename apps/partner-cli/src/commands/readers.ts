import { must, UsageError, type Api, type PartnerEvent } from '../api';
import { InterruptedError } from '../forward';
import { fields, json, table, type Output, type Styles } from '../output';
import { FOLLOW_WAIT_SECONDS, MAX_PAGE, readPage, refusedCursor, whenReachable } from '../stream';

/**
 * The small readers: a table for people by default, `--json` (the response's `data`, or for
 * `events tail` the events and the cursor) for scripts.
 */

const dash = (value: string | number | null | undefined) => (value === null || value === undefined || value === '' ? '-' : String(value));

export async function scenarios(api: Api, options: { json: boolean }, output: Output): Promise<number> {
  const list = must(await api.client.GET('/api/public/partner/v1/sandbox/scenarios')).data;
  if (options.json) {
    output.out(json(list));
    return 0;
  }
  for (const line of table(
    output.style,
    ['SCENARIO', 'STEPS', 'ENDS IN', 'DESCRIPTION'],
    list.map((s) => [s.scenario, String(s.steps), s.ends_in, s.description]),
  )) {
    output.out(line);
  }
  output.out(output.style.dim('lop trigger <scenario> runs one on a new sandbox order.'));
  return 0;
}

export async function fixtures(api: Api, options: { json: boolean }, output: Output): Promise<number> {
  const list = must(await api.client.GET('/api/public/partner/v1/sandbox/order-fixtures')).data;
  if (options.json) {
    output.out(json(list));
    return 0;
  }
  for (const line of table(
    output.style,
    ['FIXTURE', 'AVAILABLE', 'PROGRAM', 'ITEM', 'DESCRIPTION'],
    list.map((f) => [f.contract, f.available ? 'yes' : 'no', dash(f.body?.program_id), dash(f.body?.item_id), f.available ? f.description : dash(f.unavailable_reason)]),
  )) {
    output.out(line);
  }
  return 0;
}

export async function getOrder(api: Api, orderId: string, options: { json: boolean }, output: Output): Promise<number> {
  const order = must(await api.client.GET('/api/public/partner/v1/orders/{orderId}', { params: { path: { orderId } } })).data;
  if (options.json) {
    output.out(json(order));
    return 0;
  }
  const { style } = output;
  for (const line of fields(style, [
    ['order_id', style.bold(order.order_id)],
    ['external_order_id', order.external_order_id],
    ['environment', order.environment],
    ['program_id', order.program_id],
    ['item_id', order.item_id],
    ['external_subject_id', order.external_subject_id],
    ['lifecycle', style.bold(`${order.lifecycle} / ${order.lifecycle_detail}`)],
    ['next_action', order.next_action],
    ['requisition', `${order.requisition.state}${order.requisition.requisition_id ? ` ${order.requisition.requisition_id}` : ''}`],
    ['transmission', `${order.transmission.status}, acknowledgement ${order.transmission.ack_status}`],
    ['accession', dash(order.accession.accession_number)],
    ['created_at', order.created_at],
    ['updated_at', order.updated_at],
  ])) {
    output.out(line);
  }
  if (order.specimens.length > 0) {
    output.out('');
    for (const line of table(
      style,
      ['SPECIMEN', 'TYPE', 'STATUS', 'COLLECTED', 'REJECTION'],
      order.specimens.map((s) => [s.specimen_code, s.specimen_type, s.status, dash(s.collected_at), dash(s.rejection_reason)]),
    )) {
      output.out(line);
    }
  }
  return 0;
}

export async function getResults(api: Api, orderId: string, options: { json: boolean }, output: Output): Promise<number> {
  const results = must(await api.client.GET('/api/public/partner/v1/orders/{orderId}/results', { params: { path: { orderId } } })).data;
  if (options.json) {
    output.out(json(results));
    return 0;
  }
  const { style } = output;
  for (const line of fields(style, [
    ['order_id', results.order_id],
    ['pending', results.pending ? style.yellow(`yes (${dash(results.pending_reason)})`) : 'no'],
    ['current', results.current_result_id ? style.bold(`v${results.current_version} ${results.current_result_id}`) : '-'],
  ])) {
    output.out(line);
  }
  if (results.version_lineage.length > 0) {
    output.out('');
    for (const line of table(
      style,
      ['VERSION', 'STATE', 'TYPE', 'RELEASED', 'RESULT', 'CURRENT'],
      results.version_lineage.map((v) => [`v${v.version}`, v.state, v.version_type, v.released_at, v.result_id, v.is_current ? 'yes' : `superseded by ${dash(v.superseded_by_result_id)}`]),
    )) {
      output.out(line);
    }
  }
  return 0;
}

/**
 * `lop results get --fhir`: the FHIR R4 Bundle of one released version (the current one unless
 * --result names another), printed as the API wrote it, indented by the API (`_pretty=true`):
 * parsed and printed here, a quantity's `1.50` would come out `1.5`.
 */
export async function getResultFhir(api: Api, orderId: string, options: { result?: string }, output: Output): Promise<number> {
  let resultId = options.result;
  if (!resultId) {
    const results = must(await api.client.GET('/api/public/partner/v1/orders/{orderId}/results', { params: { path: { orderId } } })).data;
    if (!results.current_result_id) throw new UsageError(`order ${orderId} has no released result yet (${dash(results.pending_reason)}): there is no FHIR view to print`, 'no_released_result');
    resultId = results.current_result_id;
  }
  const bundle = must(await api.client.GET('/api/public/partner/v1/orders/{orderId}/results/{resultId}/fhir', { params: { path: { orderId, resultId }, query: { _pretty: 'true' } }, parseAs: 'text' }));
  output.out(bundle);
  return 0;
}

export interface TailOptions {
  limit: number;
  fromCursor?: string;
  follow: boolean;
  intervalMs: number;
  json: boolean;
}

function eventDetail(event: PartnerEvent): string {
  const d = event.data;
  return [d.lifecycle, d.next_action, d.specimen_state && `specimen ${d.specimen_state}`, d.result_version !== undefined && `result v${d.result_version}`, d.result_is_critical && 'critical', d.action_required_code]
    .filter(Boolean)
    .join(', ');
}

// EVENT: the id lop events resend takes.
const eventRow = (event: PartnerEvent) => [`#${event.sequence}`, event.occurred_at, event.type, event.event_id, event.data.order_id, eventDetail(event)];
const EVENT_HEADERS = ['SEQ', 'OCCURRED AT', 'TYPE', 'EVENT', 'ORDER', 'DETAIL'];

function printEvents(style: Styles, output: Output, events: PartnerEvent[], header: boolean) {
  const lines = table(style, EVENT_HEADERS, events.map(eventRow));
  for (const line of header ? lines : lines.slice(1)) output.out(line);
}

/** The command line that goes on from `cursor` after a follow stops. */
export const tailResumeCommand = (options: Pick<TailOptions, 'json'>, cursor: string) => `lop events tail --follow --from-cursor ${cursor}${options.json ? ' --json' : ''}`;

/**
 * `lop events tail`: the last `limit` events of the stream (or the `limit` after --from-cursor),
 * then with --follow every new one as it arrives. With --json --follow each event is one line,
 * exactly as the stream returned it. Following, a service that restarts (or is not up yet) is
 * waited for, as lop listen waits; stopping (Ctrl-C, SIGTERM, SIGHUP) prints where to go on from.
 */
export async function tailEvents(api: Api, options: TailOptions, output: Output, stop: AbortSignal, onCursor: (cursor: string) => void): Promise<number> {
  let cursor = options.fromCursor;
  let shown: { event: PartnerEvent; raw: string }[] = [];
  let hasMore = false;
  // Following, an outage is waited out (waiting lines on stderr: stdout stays the events); a single read fails at once.
  const reach = <T>(call: () => Promise<T>) => (options.follow ? whenReachable(call, output, false, stop, options.intervalMs) : call());
  try {
    if (options.fromCursor !== undefined) {
      const page = await reach(() => readPage(api, cursor, options.limit)).catch((error: unknown) => {
        throw refusedCursor(error, '--from-cursor');
      });
      shown = page.events;
      cursor = page.nextCursor;
      hasMore = page.hasMore;
    } else {
      for (;;) {
        const page = await reach(() => readPage(api, cursor, MAX_PAGE));
        shown = [...shown, ...page.events].slice(-options.limit);
        cursor = page.nextCursor;
        if (!page.hasMore) break;
      }
    }
  } catch (error) {
    if (!(error instanceof InterruptedError)) throw error;
    output.err(options.fromCursor !== undefined ? `stopped before the service answered; resume with: ${tailResumeCommand(options, options.fromCursor)}` : 'stopped before the service answered; nothing was read');
    return 0;
  }
  onCursor(cursor!);

  if (!options.follow) {
    if (options.json) {
    output.out(json({ events: shown.map((e) => e.event), next_cursor: cursor, has_more: hasMore }));
    return 0;
  }
    if (shown.length === 0) output.out(output.style.dim('no events'));
    else printEvents(output.style, output, shown.map((e) => e.event), true);
    output.out(output.style.dim(`next cursor: ${cursor}${hasMore ? ` (more events follow: lop events tail --from-cursor ${cursor})` : ''}`));
    return 0;
  }

  const emit = (items: { event: PartnerEvent; raw: string }[], header: boolean) => {
    if (options.json) for (const item of items) output.out(item.raw);
    else if (items.length > 0) printEvents(output.style, output, items.map((e) => e.event), header);
  };
  emit(shown, true);
  let header = shown.length === 0;
  try {
    for (;;) {
      // Held by the service until the next event commits: no sleep between reads.
      const page = await reach(() => readPage(api, cursor, MAX_PAGE, { waitSeconds: FOLLOW_WAIT_SECONDS, stop }));
      emit(page.events, header && page.events.length > 0);
      if (page.events.length > 0) header = false;
      cursor = page.nextCursor;
      onCursor(cursor);
    }
  } catch (error) {
    if (!(error instanceof InterruptedError)) throw error;
  }
  output.err(`cursor: ${cursor}`);
  output.err(`resume with: ${tailResumeCommand(options, cursor!)}`);
  return 0;
}
