/**
 * How fast one client's stream takes concurrent writes (issue 31): W writers append to the same
 * (client, environment) stream, each transaction one event matched by two webhook subscriptions (so
 * two deliveries and two pg-boss jobs, as a partner with endpoints has), through the real
 * appendEvents. Run on two schemas, so the same code takes each order of work:
 *   - before 0014: the counter first, then the events, deliveries and jobs, then the commit;
 *   - from 0014:   deliveries and jobs first, then the counter, the events and the commit.
 *
 *   npx tsx tools/bench/stream-append.ts [--seconds 10] [--writers 1,4,8]
 *
 * Prints transactions per second and latency per writer count; uses DATABASE_URL's server.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { SCOPES } from '@lop/contract';
import { connectDatabase, createTestDatabase, migrationsFolderOf, runMigrations, withDatabase } from '@lop/db';
import {
  appendEvents,
  attachDeliveryQueue,
  createClient,
  createKey,
  createSubscription,
  DataProtector,
  demoId,
  grantPrograms,
  openDeliveryQueue,
  seedDemo,
  type EventDraft,
} from '@lop/domain';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, writers: { type: 'string', default: '1,4,8' } } });
const seconds = Number(values.seconds);
const writerCounts = values.writers!.split(',').map(Number);
const serverUrl = withDatabase(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', 'postgres');

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

async function measure(schema: 'before 0014' | 'from 0014') {
  const database = await createTestDatabase(serverUrl, 'stream-append', { migrated: false });
  const folder = schema === 'before 0014' ? await migrationsFolderOf({ upTo: '0013_rollout_safe_indexes' }) : undefined;
  await runMigrations(database.url, folder ? { folder: folder.folder } : {});
  await folder?.remove();
  const connection = connectDatabase(database.url, { max: Math.max(...writerCounts) + 1, applicationName: 'bench-stream-append' });
  const queue = await openDeliveryQueue({ databaseUrl: database.url, settings: { attemptTimeoutSeconds: 10, pollIntervalSeconds: 2, historyRetentionSeconds: 86_400 }, role: 'sender' });
  const detach = attachDeliveryQueue(queue);
  const rows: string[] = [];
  try {
    const demo = await seedDemo(connection.db);
    const programId = demoId('program:wellness-sbx');
    const client = await createClient(connection.db, demo.laboratory_id, 'Stream append bench');
    await grantPrograms(connection.db, { clientId: client.client_id, environment: 'sandbox', programId });
    await createKey(connection.db, { clientId: client.client_id, environment: 'sandbox', scopes: [...SCOPES] });
    const protector = new DataProtector(randomBytes(32));
    for (const path of ['a', 'b']) {
      await createSubscription(connection.db, protector, { clientId: client.client_id, environment: 'sandbox', url: `http://127.0.0.1:9/${path}`, eventTypes: ['order.updated'] }, { allowLoopback: true, servicePorts: [] });
    }
    const stream = { clientId: client.client_id, environment: 'sandbox' as const };
    const draft = (): EventDraft => {
      const orderId = randomUUID();
      return { type: 'order.updated', occurredAt: new Date(), orderId, programId, data: { order_id: orderId, external_order_id: 'bench', program_id: programId, client_id: client.client_id, environment: 'sandbox', lifecycle: 'active' } };
    };
    for (const writers of writerCounts) {
      // A warm-up second: prepared statements, pg-boss's queue cache.
      for (const measured of [false, true]) {
        const latencies: number[] = [];
        const until = performance.now() + (measured ? seconds : 1) * 1000;
        await Promise.all(
          Array.from({ length: writers }, async () => {
            while (performance.now() < until) {
              const started = performance.now();
              await connection.db.transaction((tx) => appendEvents(tx, stream, [draft()]));
              latencies.push(performance.now() - started);
            }
          }),
        );
        if (!measured) continue;
        latencies.sort((a, b) => a - b);
        rows.push(`| ${schema} | ${writers} | ${Math.round(latencies.length / seconds)} | ${percentile(latencies, 50).toFixed(1)} ms | ${percentile(latencies, 99).toFixed(1)} ms |`);
      }
    }
  } finally {
    detach();
    await queue.boss.stop({ graceful: false });
    await connection.close();
    await database.drop();
  }
  return rows;
}

const table = ['| schema (order of work) | writers | transactions/s | p50 | p99 |', '|---|---|---|---|---|'];
for (const schema of ['before 0014', 'from 0014'] as const) table.push(...(await measure(schema)));
console.log(table.join('\n'));
process.exit(0);
