// Runs the committed Postman collection with newman, end to end, against the service started on
// a fresh database that is first given a long history (`npm run postman:run`; CI runs it after the
// tests). Exit code 1 on any failure.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error newman ships no type declarations
import newman from 'newman';
import { connectDatabase } from '@lop/db';
import { EVENTS_MAX_LIMIT, PROJECT_ROOT } from '@lop/domain';
import { loadBenchData } from '../bench/load-data';
import { withFreshSandbox } from '../sandbox-service/fresh-sandbox';
import { COLLECTION_FILE, ENVIRONMENT_FILE } from './files';

/**
 * A partner's sandbox is rarely new: the collection must work after any amount of earlier
 * activity of the same API client. More events than one page of the stream holds (and more than
 * the 100 an unpaged read returns) catch a flow that reads the stream from its start.
 */
const HISTORY_MIN_EVENTS = EVENTS_MAX_LIMIT + 100;
/** Earlier orders of the demo client; the benchmark's loader gives each about ten events. */
const HISTORY_ORDERS = 80;

const readJson = (path: string) => JSON.parse(readFileSync(join(PROJECT_ROOT, path), 'utf8'));

/** Earlier orders driven through the sandbox scenarios and copied (the benchmark's loader, a couple of seconds). */
async function giveHistory(databaseUrl: string): Promise<number> {
  const database = connectDatabase(databaseUrl, { max: 2, applicationName: 'newman-history' });
  try {
    const { eventCount } = await loadBenchData(database, { orders: HISTORY_ORDERS });
    if (eventCount < HISTORY_MIN_EVENTS) throw new Error(`the history holds ${eventCount} events, fewer than ${HISTORY_MIN_EVENTS}: raise HISTORY_ORDERS`);
    return eventCount;
  } finally {
    await database.close();
  }
}

const code = await withFreshSandbox('newman', async (sandbox) => {
  const events = await giveHistory(sandbox.databaseUrl);
  console.log(`newman: the sandbox's API client already has ${events} events`);
  const environment = readJson(ENVIRONMENT_FILE);
  for (const variable of environment.values) {
    if (variable.key === 'base_url') variable.value = sandbox.baseUrl;
    if (variable.key === 'api_key') variable.value = sandbox.key;
  }
  const summary = await new Promise<any>((resolve, reject) => {
    newman.run({ collection: readJson(COLLECTION_FILE), environment, reporters: ['cli'], reporter: { cli: { noSummary: false } }, timeoutRequest: 30_000 }, (error: unknown, result: any) =>
      error ? reject(error) : resolve(result),
    );
  });
  const { assertions, requests } = summary.run.stats;
  const failures = summary.run.failures.length;
  console.log(`newman: ${requests.total} requests, ${assertions.total} assertions, ${failures === 0 ? 'no failures' : `${failures} failure(s)`}`);
  if (failures > 0) console.error(sandbox.output().slice(-4000));
  return failures === 0 ? 0 : 1;
});
process.exit(code);
