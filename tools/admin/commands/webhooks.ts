import { userInfo } from 'node:os';
import { type Environment, EVENT_TYPES, type EventType } from '@lop/contract';
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  createSubscription,
  disableSubscription,
  getDelivery,
  listDeliveries,
  listSubscriptions,
  loadConfig,
  parseEventTypeList,
  PLAIN_DECIMAL,
  protectorWithKeyring,
  replayDelivery,
  rotateSubscriptionSecret,
  sendTestDelivery,
  webhookSettings,
  type DeliveryView,
} from '@lop/domain';
import { ENVIRONMENT_CHOICES, uuidArgument } from '../arguments';
import { operatorActor } from '../operator';
import { withDatabase } from '../database';
import { fields, jsonOption, print, table, type OutputOptions } from '../output';

function eventTypesArgument(text: string): EventType[] {
  try {
    return parseEventTypeList(text);
  } catch (error) {
    throw new InvalidArgumentError(`${(error as Error).message}, or all.`);
  }
}

function limitArgument(text: string): number {
  // Number() would read 0x10 as 16 and 1e2 as 100: plain decimal only, as for the API's limit.
  const n = PLAIN_DECIMAL.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new InvalidArgumentError('expected a whole number from 1 to 1000 in plain decimal digits.');
  return n;
}

/** Who asked for a replay, for the audit trail. */
function operator(): string {
  let name = process.env.USER ?? '';
  try {
    name ||= userInfo().username;
  } catch {
    // No user database entry (some containers): the fallback below still says where it came from.
  }
  return `${name || 'unknown'} (admin CLI)`;
}

type Subscription = Awaited<ReturnType<typeof listSubscriptions>>[number];

function describeSubscription(s: Subscription): [string, string][] {
  return [
    ['subscription_id', s.subscription_id],
    ['client_id', s.client_id],
    ['environment', s.environment],
    ['url', s.url],
    ['event_types', s.event_types.join(', ')],
    ['status', s.status],
  ];
}

// The retry an attempt planned is printed only while the delivery still waits for it (its latest
// attempt, the delivery pending): "retry now", a dead letter or a cancel leave the row's time stale.
const attemptLine = (a: DeliveryView['attempts'][number], scheduled: string | null) =>
  `    #${a.attempt} ${a.started_at} ${a.outcome}${a.status_code ? ` status ${a.status_code}` : ''}${a.error_class ? ` (${a.error_class})` : ''}${a.duration_ms === null ? '' : ` ${a.duration_ms} ms`}` +
  (scheduled ? `, next at ${scheduled}` : '');

function describeDelivery(d: DeliveryView): string {
  return [
    fields([
      ['delivery_id', d.delivery_id],
      ['subscription_id', d.subscription_id],
      ['event_id', d.event_id ?? '(test delivery)'],
      ['kind', d.replay_of ? `${d.kind} of ${d.replay_of}` : d.kind],
      ['state', d.failure_reason ? `${d.state} (${d.failure_reason})` : d.state],
      ...(d.replayed_by.length > 0 ? ([['replayed_by', d.replayed_by.join(', ')]] as [string, string][]) : []),
      ...(d.recovered_at ? ([['recovered', `${d.recovered_at}${d.recovered_by ? ` by ${d.recovered_by}` : ''}`]] as [string, string][]) : []),
      ['attempts', String(d.attempts_made)],
      ...(d.next_attempt_at ? ([['next_attempt_at', d.next_attempt_at]] as [string, string][]) : []),
    ]),
    ...d.attempts.map((a, i) => attemptLine(a, d.state === 'pending' && i === d.attempts.length - 1 ? d.next_attempt_at : null)),
  ].join('\n');
}

export function registerWebhooks(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description('webhook subscriptions: signed event deliveries to a partner endpoint; the signing secret is shown once');

  webhooks
    .command('create')
    .description('subscribe an HTTPS endpoint to event types of one API client in one environment')
    .requiredOption('--client <id>', 'API client id (uuid); it needs an active key in the environment', uuidArgument)
    .addOption(new Option('--environment <environment>', 'sandbox or production').choices(ENVIRONMENT_CHOICES).makeOptionMandatory())
    .requiredOption('--url <url>', 'public https:// endpoint (no user information)')
    .requiredOption('--events <types>', 'comma-separated event types, or all', eventTypesArgument)
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { client: string; environment: Environment; url: string; events: EventType[] }) => {
      const config = loadConfig();
      const created = await withDatabase(async (db, session) =>
        createSubscription(
          db,
          await protectorWithKeyring(config, session.sql),
          { clientId: options.client, environment: options.environment, url: options.url, eventTypes: options.events },
          webhookSettings(config, session.databaseUrl).destination,
          operatorActor(),
        ),
      );
      print(created, options, (s) =>
        [`Created webhook subscription. Store the signing secret now: it cannot be shown again.`, fields([['secret', s.secret], ...describeSubscription(s)])].join('\n'),
      );
    });

  webhooks
    .command('list')
    .description('list webhook subscriptions (never their secrets)')
    .option('--client <id>', 'only this API client (uuid)', uuidArgument)
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { client?: string }) => {
      const rows = await withDatabase((db) => listSubscriptions(db, { clientId: options.client }));
      print(rows, options, (list) =>
        table(
          list,
          [
            ['subscription_id', (s) => s.subscription_id],
            ['client_id', (s) => s.client_id],
            ['environment', (s) => s.environment],
            ['status', (s) => s.status],
            ['events', (s) => (s.event_types.length === 9 ? 'all' : s.event_types.join(','))],
            ['url', (s) => s.url],
          ],
          'No webhook subscriptions.',
        ),
      );
    });

  webhooks
    .command('disable')
    .description('stop deliveries to a subscription at once; its pending deliveries are cancelled')
    .argument('<subscription_id>', 'subscription id (uuid)', uuidArgument)
    .addOption(jsonOption())
    .action(async (id: string, options: OutputOptions) => {
      const result = await withDatabase((db) => disableSubscription(db, id, operatorActor()));
      print(result, options, (r) => `Disabled subscription ${r.subscription_id}; cancelled ${r.cancelled_deliveries} pending deliveries.`);
    });

  webhooks
    .command('rotate-secret')
    .description('replace the signing secret; the old one stops working at once, the new one is shown once')
    .argument('<subscription_id>', 'subscription id (uuid)', uuidArgument)
    .addOption(jsonOption())
    .action(async (id: string, options: OutputOptions) => {
      const config = loadConfig();
      const result = await withDatabase(async (db, session) => rotateSubscriptionSecret(db, await protectorWithKeyring(config, session.sql), id, operatorActor()));
      print(result, options, (r) =>
        [`Rotated the signing secret of ${r.subscription_id}. Store it now: it cannot be shown again.`, fields([['secret', r.secret]])].join('\n'),
      );
    });

  webhooks
    .command('test')
    .description('send a signed test delivery now: an event envelope of the chosen type, flagged x-partner-test: true, in no stream; checks reachability and signing')
    .argument('<subscription_id>', 'subscription id (uuid)', uuidArgument)
    .addOption(new Option('--type <event_type>', 'the type of the test event').choices(EVENT_TYPES).default('order.created'))
    .addOption(jsonOption())
    .action(async (id: string, options: OutputOptions & { type: EventType }) => {
      const config = loadConfig();
      const result = await withDatabase(async (db, session) => {
        const settings = webhookSettings(config, session.databaseUrl);
        return sendTestDelivery(db, await protectorWithKeyring(config, session.sql), id, { timeoutMs: settings.attemptTimeoutMs, ...settings.destination }, { type: options.type });
      });
      print(result, options, (r) => [`Test delivery ${r.state === 'delivered' ? 'succeeded' : 'FAILED'}.`, describeDelivery(r)].join('\n'));
      if (result.state !== 'delivered') {
        throw new Error(`the test delivery failed: ${result.last_status_code ? `status ${result.last_status_code}` : (result.detail ?? result.last_error_class)}`);
      }
    });

  const deliveries = program.command('deliveries').description('webhook deliveries: attempts, dead letters and replay');

  deliveries
    .command('list')
    .description('recent deliveries with every attempt, newest first')
    .option('--subscription <id>', 'only this subscription (uuid)', uuidArgument)
    .option('--dead', 'only dead letters (attempts exhausted or a permanent failure)')
    .option('--limit <n>', 'at most this many (default 100)', limitArgument)
    .addOption(jsonOption())
    .action(async (options: OutputOptions & { subscription?: string; dead?: boolean; limit?: number }) => {
      const rows = await withDatabase((db) => listDeliveries(db, { subscriptionId: options.subscription, dead: options.dead, limit: options.limit }));
      print(rows, options, (list) => (list.length === 0 ? (options.dead ? 'No dead letters.' : 'No deliveries.') : list.map(describeDelivery).join('\n\n')));
    });

  deliveries
    .command('show')
    .description('one delivery with every attempt')
    .argument('<delivery_id>', 'delivery id (uuid)', uuidArgument)
    .addOption(jsonOption())
    .action(async (id: string, options: OutputOptions) => {
      const delivery = await withDatabase((db) => getDelivery(db, id));
      print(delivery, options, describeDelivery);
    });

  deliveries
    .command('replay')
    .description('deliver the same event again as a new delivery (new delivery id, new attempt chain); the original stays as it was')
    .argument('<delivery_id>', 'delivery id (uuid) of a delivered or dead-lettered delivery', uuidArgument)
    .addOption(jsonOption())
    .action(async (id: string, options: OutputOptions) => {
      const replay = await withDatabase(async (db, session) => replayDelivery(db, await session.deliveryQueue(), id, operator()));
      print(replay, options, (r) => [`Replay scheduled as delivery ${r.delivery_id}.`, describeDelivery(r)].join('\n'));
    });
}
