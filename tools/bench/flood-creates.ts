/**
 * Client A's create flood for the noisy-neighbour bench, in a process of its own: a partner's
 * traffic comes from elsewhere, so it must not share an event loop with B's load generator and
 * webhook receiver (in one process, B's timings measured the flooder's loop, not the service).
 *
 *   node --import tsx tools/bench/flood-creates.ts '<json settings>'   # prints one JSON line: FloodFigures
 */
import { PARTNER_BASE_PATH } from '@lop/contract';
import autocannon from 'autocannon';

export interface FloodSettings {
  url: string;
  keys: string[];
  connections: number;
  seconds: number;
  runId: string;
  programId: string;
  itemId: string;
}

export interface FloodFigures {
  requests: number;
  statusCodes: Record<string, number>;
  /** Slowest answer other than 201 (429, 503 …), in ms; null when nothing was refused. */
  slowestRefusalMs: number | null;
  slowestAnswerMs: number;
  transportErrors: number;
}

const settings = JSON.parse(process.argv[2]!) as FloodSettings;
let n = 0;
const flood = autocannon({
  url: settings.url,
  connections: settings.connections,
  duration: settings.seconds,
  timeout: 30,
  requests: [
    {
      setupRequest: (request) => {
        const id = `a-${settings.runId}-${n++}`;
        return {
          ...request,
          method: 'POST',
          path: `${PARTNER_BASE_PATH}/v1/orders`,
          headers: { ...request.headers, authorization: `Bearer ${settings.keys[n % settings.keys.length]}`, 'content-type': 'application/json', 'idempotency-key': id },
          body: JSON.stringify({ external_order_id: id, program_id: settings.programId, item_id: settings.itemId, external_subject_id: 'noisy-subject', collection: 'in_person_draw', region: 'US-CA' }),
        };
      },
    },
  ],
});
let slowestRefusalMs: number | null = null;
let slowestAnswerMs = 0;
(flood as unknown as autocannon.Instance).on('response', (_client, statusCode, _bytes, responseTime) => {
  slowestAnswerMs = Math.max(slowestAnswerMs, Math.round(responseTime));
  if (statusCode !== 201) slowestRefusalMs = Math.max(slowestRefusalMs ?? 0, Math.round(responseTime));
});
const result = await flood;
const statusCodes: Record<string, number> = {};
for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = (stats as { count: number }).count;
const figures: FloodFigures = {
  requests: Object.values(statusCodes).reduce((x, y) => x + y, 0),
  statusCodes,
  slowestRefusalMs,
  slowestAnswerMs,
  transportErrors: result.errors + result.timeouts,
};
process.stdout.write(`${JSON.stringify(figures)}\n`);
