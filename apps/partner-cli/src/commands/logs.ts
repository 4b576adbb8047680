import { OPENAPI_PATH, PARTNER_BASE_PATH } from '@lop/contract';
import { ApiError, must, UsageError, type Api, type Schemas } from '../api';
import { InterruptedError, sleep } from '../forward';
import type { Output, Styles } from '../output';
import { whenReachable } from '../stream';

type Entry = Schemas['RequestLogEntry'];
type StatusClass = Schemas['StatusClass'];

export const STATUS_CLASSES: readonly StatusClass[] = ['2xx', '3xx', '4xx', '5xx'];

export interface LogsTailOptions {
  limit: number;
  after?: string;
  status?: StatusClass;
  route?: string;
  requestId?: string;
  /** The service's own filters (GET /v1/sandbox/request-log): lists comma-separated, as the API takes them. */
  since?: string;
  until?: string;
  method?: string;
  source?: string;
  keyPrefix?: string;
  search?: string;
  follow: boolean;
  intervalMs: number;
  json: boolean;
}

/** The service's refusal of `--after` (malformed, another client's) is a usage error, as for event cursors. */
function refusedAfter(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.status !== 400) return error;
  const detail = error.details.find((d) => d.field === 'after');
  if (!detail) return error;
  return new UsageError(`--after was refused by the service: ${error.message}${error.requestId ? ` (request_id ${error.requestId})` : ''}`, detail.issue ?? 'invalid_cursor', error.body);
}

function statusText(style: Styles, entry: Entry): string {
  const text = String(entry.status);
  return entry.status >= 500 ? style.red(text) : entry.status >= 400 ? style.yellow(text) : style.green(text);
}

/** One line per request: time, method, route, status, error code, duration, request_id, key prefix, where it came from. */
export function logLine(style: Styles, entry: Entry): string {
  const time = entry.occurred_at.slice(11, 23);
  return [
    style.dim(time),
    entry.method.padEnd(6),
    entry.route.padEnd(44),
    statusText(style, entry),
    (entry.error_code ?? '-').padEnd(24),
    `${entry.duration_ms} ms`.padStart(8),
    entry.request_id,
    entry.key_prefix,
    entry.source === 'console' ? style.cyan('console') : entry.source === 'lop' ? style.dim('lop') : 'rest',
  ].join('  ');
}

/**
 * The route templates the log can hold: the paths of the service's own OpenAPI document (the log
 * keeps the template of a REST route, or of the REST route a console action stands for). Null
 * when the document cannot be read: the filter is then sent unchecked.
 */
async function routeTemplates(api: Api): Promise<string[] | null> {
  const origin = api.baseUrl.slice(0, -PARTNER_BASE_PATH.length);
  try {
    const response = await fetch(`${origin}${OPENAPI_PATH}`, { signal: AbortSignal.timeout(10_000) });
    if (!response.ok) return null;
    const document = (await response.json()) as { paths?: Record<string, unknown> };
    const templates = Object.keys(document.paths ?? {})
      .filter((path) => path.startsWith(`${PARTNER_BASE_PATH}/`))
      .map((path) => path.slice(PARTNER_BASE_PATH.length));
    return templates.length > 0 ? templates : null;
  } catch {
    return null;
  }
}

/** `--route` must be a template the API has, or the tail would wait forever for requests that cannot come. */
async function checkRoute(api: Api, route: string): Promise<void> {
  const templates = await routeTemplates(api);
  if (!templates || templates.includes(route)) return;
  throw new UsageError(`--route ${route} is not a route template of the API (templates are spelled as the OpenAPI document spells them, e.g. /v1/orders/{orderId}); one of: ${templates.join(', ')}`, 'unknown_route');
}

type FilterOptions = Pick<LogsTailOptions, 'status' | 'route' | 'requestId' | 'since' | 'until' | 'method' | 'source' | 'keyPrefix' | 'search'>;

/** The filters given, as the command line spells them. */
const filterFlags = (options: FilterOptions) =>
  [
    options.status && `--status ${options.status}`,
    options.route && `--route '${options.route}'`,
    options.requestId && `--request-id ${options.requestId}`,
    options.since && `--since ${options.since}`,
    options.until && `--until ${options.until}`,
    options.method && `--method ${options.method}`,
    options.source && `--source ${options.source}`,
    options.keyPrefix && `--key-prefix ${options.keyPrefix}`,
    options.search && `--search '${options.search.replaceAll("'", "'\\''")}'`,
  ].filter((flag): flag is string => Boolean(flag));

/** The command line that goes on from `cursor`: the same filters, after it. */
export function logsResumeCommand(options: FilterOptions & Pick<LogsTailOptions, 'json'>, cursor: string): string {
  return ['lop logs tail --after', cursor, ...filterFlags(options), ...(options.json ? ['--json'] : [])].join(' ');
}

const describeFilters = (options: FilterOptions) => filterFlags(options).join(' ');

/**
 * `lop logs tail`: the latest sandbox requests of your API client (GET /v1/sandbox/request-log), then
 * every new one as it is logged, until Ctrl-C (or SIGTERM, SIGHUP), which prints where to resume.
 * A restarting service is waited for. `--json`: each entry on its own line as the API returned it.
 */
export async function tailLogs(api: Api, options: LogsTailOptions, output: Output, stop: AbortSignal, onCursor: (cursor: string) => void): Promise<number> {
  if (options.route !== undefined) await checkRoute(api, options.route);
  const filters = {
    status_class: options.status,
    route: options.route,
    request_id: options.requestId,
    since: options.since,
    until: options.until,
    method: options.method,
    source: options.source,
    key_prefix: options.keyPrefix,
    q: options.search,
  };
  const read = async (after: string | undefined, limit: number) => {
    // Only what was given: the service refuses a parameter sent empty.
    const query = Object.fromEntries(Object.entries({ ...filters, after, limit }).filter(([, value]) => value !== undefined));
    return must(await api.client.GET('/api/public/partner/v1/sandbox/request-log', { params: { query } })).data;
  };
  const emit = (entries: Entry[]) => {
    for (const entry of entries) output.out(options.json ? JSON.stringify(entry) : logLine(output.style, entry));
  };
  // Following, an outage is waited out (waiting lines on stderr); a single read fails at once.
  const reach = <T>(call: () => Promise<T>) => (options.follow ? whenReachable(call, output, false, stop, options.intervalMs) : call());
  let page: Awaited<ReturnType<typeof read>>;
  try {
    page = await reach(() => read(options.after, options.limit)).catch((error: unknown) => {
      throw refusedAfter(error);
    });
  } catch (error) {
    if (!(error instanceof InterruptedError)) throw error;
    output.err(options.after !== undefined ? `stopped before the service answered; resume with: ${logsResumeCommand(options, options.after)}` : 'stopped before the service answered; nothing was read');
    return 0;
  }
  emit(page.entries);
  let cursor = page.next_cursor;
  onCursor(cursor);
  const filtered = describeFilters(options);
  if (page.entries.length === 0) {
    // Said on stderr, so an empty answer is not mistaken for a filter that was ignored.
    // A filtered read examines a window of the log (docs/request-log.md): has_more says more follow it.
    const more = page.has_more && !options.follow ? ' in the requests this read examined; more follow: go on with --after the cursor below' : '';
    output.err(`no logged request${filtered ? ` matches ${filtered}` : ''}${options.after !== undefined ? ' after that cursor' : ''}${more}${options.follow ? ' yet; waiting for new ones' : ''}`);
  }
  if (!options.follow) {
    if (!options.json) output.err(`cursor: ${cursor}`);
    return 0;
  }
  try {
    for (;;) {
      if (!page.has_more) await sleep(options.intervalMs, stop);
      page = await reach(() => read(cursor, 200));
      emit(page.entries);
      cursor = page.next_cursor;
      onCursor(cursor);
    }
  } catch (error) {
    if (!(error instanceof InterruptedError)) throw error;
  }
  output.err(`cursor: ${cursor}`);
  output.err(`resume with: ${logsResumeCommand(options, cursor)}`);
  return 0;
}
