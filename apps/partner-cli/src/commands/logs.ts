import { ApiError, must, UsageError, type Api, type Schemas } from '../api';
import { InterruptedError, sleep } from '../forward';
import type { Output, Styles } from '../output';

type Entry = Schemas['RequestLogEntry'];
type StatusClass = Schemas['StatusClass'];

export const STATUS_CLASSES: readonly StatusClass[] = ['2xx', '3xx', '4xx', '5xx'];

export interface LogsTailOptions {
  limit: number;
  after?: string;
  status?: StatusClass;
  route?: string;
  requestId?: string;
  follow: boolean;
  intervalMs: number;
  json: boolean;
}

/** The service's refusal of `--after` (malformed, another client's) is a usage error, as for event cursors. */
function refusedAfter(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.status !== 400) return error;
  const detail = error.details.find((d) => d.field === 'after');
  if (!detail) return error;
  return new UsageError(`--after was refused by the service: ${error.message}${error.requestId ? ` (request_id ${error.requestId})` : ''}`, detail.issue ?? 'invalid_cursor');
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
    entry.source === 'console' ? style.cyan('console') : 'rest',
  ].join('  ');
}

/**
 * `lop logs tail`: the latest sandbox requests of your API client (GET /v1/sandbox/request-log), then
 * every new one as it is logged, until Ctrl-C. `--json`: each entry on its own line as the API returned it.
 */
export async function tailLogs(api: Api, options: LogsTailOptions, output: Output, stop: AbortSignal, onCursor: (cursor: string) => void): Promise<number> {
  const filters = { status_class: options.status, route: options.route, request_id: options.requestId };
  const read = async (after: string | undefined, limit: number) => {
    // Only what was given: the service refuses a parameter sent empty.
    const query = Object.fromEntries(Object.entries({ ...filters, after, limit }).filter(([, value]) => value !== undefined));
    return must(await api.client.GET('/api/public/partner/v1/sandbox/request-log', { params: { query } })).data;
  };
  const emit = (entries: Entry[]) => {
    for (const entry of entries) output.out(options.json ? JSON.stringify(entry) : logLine(output.style, entry));
  };
  let page = await read(options.after, options.limit).catch((error: unknown) => {
    throw refusedAfter(error);
  });
  emit(page.entries);
  let cursor = page.next_cursor;
  onCursor(cursor);
  if (!options.follow) {
    if (!options.json) output.err(`cursor: ${cursor}`);
    return 0;
  }
  try {
    for (;;) {
      if (!page.has_more) await sleep(options.intervalMs, stop);
      page = await read(cursor, 200);
      emit(page.entries);
      cursor = page.next_cursor;
      onCursor(cursor);
    }
  } catch (error) {
    if (!(error instanceof InterruptedError)) throw error;
  }
  output.err(`cursor: ${cursor}`);
  return 0;
}
