import { Command, InvalidArgumentError, Option } from 'commander';
import { REQUEST_LOG_METHODS, REQUEST_LOG_QUERY_MAX, REQUEST_LOG_SOURCES, SANDBOX_KEY_PREFIX_PATTERN } from '@lop/contract';
import { CLI_VERSION, createApi, DEFAULT_BASE_URL, UsageError, type Api } from './api';
import { listen, listenResumeCommand, parseForwardTo } from './commands/listen';
import { logsResumeCommand, STATUS_CLASSES, tailLogs, type LogsTailOptions } from './commands/logs';
import { resendEvent } from './commands/resend';
import { fixtures, getOrder, getResultFhir, getResults, scenarios, tailEvents, tailResumeCommand } from './commands/readers';
import { trigger } from './commands/trigger';
import type { Output } from './output';
import { MAX_PAGE, parseEventTypes } from './stream';

/** What a command hands back to main: its exit code, and the cursor to print if it is interrupted. */
export interface Run {
  exitCode: number;
  /** Aborted on the first Ctrl-C by main; long-running commands stop at the next safe point. */
  stop: AbortController;
  /** The last position that loses nothing, for a second (forced) Ctrl-C or a failure mid-run. */
  cursor: string | null;
  /** The command line that resumes from a cursor, printed with it when the command cannot print it itself. */
  resume: ((cursor: string) => string) | null;
  /** Errors are printed as the API's JSON envelope when the command was asked for --json. */
  json: boolean;
}

const EXIT_CODES = `
Exit codes: 0 success; 1 failure (an API error, the service unreachable, a delivery that failed);
2 usage (unknown command or option, a bad value, no API key, a production key where a sandbox key
is needed). Errors print the API's code, message and request_id. docs/cli.md has a session.`;

/** One or more of `names`, comma-separated, passed on as the API takes it (`rest,console`). */
function nameList(names: readonly string[]) {
  return (text: string) => {
    if (!text.split(',').every((name) => names.includes(name))) throw new InvalidArgumentError(`one or more of ${names.join(', ')}, comma-separated`);
    return text;
  };
}

function positiveInteger(max: number) {
  return (text: string) => {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1 || value > max) throw new InvalidArgumentError(`a whole number from 1 to ${max}`);
    return value;
  };
}

/** A cursor option given empty (`--from-cursor ""`, an unset shell variable) is a usage error saying so, not a refusal by the service. */
function cursorValue(option: string) {
  return (text: string) => {
    if (text.trim() === '') throw new InvalidArgumentError(`${option} needs a cursor (the one a listen or tail printed when it stopped); it was given an empty value`);
    return text;
  };
}

function eventTypes(text: string) {
  try {
    return parseEventTypes(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

export function buildProgram(output: Output, run: Run): Command {
  const program = new Command('lop')
    .description('The Laboratory Ordering Partner API from your terminal: forward webhooks to a local handler, run sandbox scenarios, read orders, results and events.')
    .version(CLI_VERSION, '-V, --version')
    .addOption(new Option('--api-key <key>', 'API key').env('LOP_API_KEY'))
    .addOption(new Option('--base-url <url>', "the API's {base_url}").env('LOP_BASE_URL').default(DEFAULT_BASE_URL))
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: (text) => process.stdout.write(text), writeErr: (text) => process.stderr.write(text) })
    .addHelpText('after', EXIT_CODES);

  /** The API for a command: the key and base URL from the options or the environment. */
  const api = (command: Command): Api => {
    const options = command.optsWithGlobals<{ apiKey?: string; baseUrl: string }>();
    if (!options.apiKey) throw new UsageError('no API key: pass --api-key or set LOP_API_KEY (npm start prints a sandbox key)');
    return createApi({ apiKey: options.apiKey, baseUrl: options.baseUrl });
  };
  const jsonOption = (description = 'print JSON for scripts instead of a table') => new Option('--json', description);
  const intervalOption = () => new Option('--interval <ms>', 'milliseconds between polls once read to the end (logs tail), and the first pause after an outage (listen); listen and events tail -f do not poll: the service holds each read until the next event').argParser(positiveInteger(60_000)).default(1000);
  const withJson = (command: Command) => {
    command.hook('preAction', (_this, action) => {
      run.json = Boolean(action.opts().json);
    });
    return command;
  };

  program
    .command('listen')
    .description(
      'Follow the event stream (GET /v1/events) and POST each event to a local URL exactly as a webhook delivery: the same headers, signed with a local secret, the body byte for byte the stream object.',
    )
    .requiredOption('--forward-to <url>', 'where to deliver, e.g. http://localhost:4000/hooks')
    .option('--events <types>', 'comma-separated event types to forward (default: all)', eventTypes)
    .option('--from-cursor <cursor>', 'start after this cursor (printed when a listen stops) instead of now', cursorValue('--from-cursor'))
    .option('--secret <secret>', 'signing secret to use, kept for this URL from now on (default: the one kept for this URL, or a new whsec_…)')
    .option('--allow-production', 'forward a production stream (read-only) too; refused without it', false)
    .option('--skip-verify', "do not check the forward target's HTTPS certificate (a local handler with a self-signed one); the API's is still checked", false)
    .addOption(new Option('--max-attempts <n>', 'attempts per event before it is reported failed (retried: network errors, timeouts, 408, 409, 425, 429, 5xx)').argParser(positiveInteger(10)).default(4))
    .addOption(intervalOption())
    .addOption(jsonOption('one JSON object per line: ready, each delivery attempt, stopped'))
    .addHelpText(
      'after',
      `
One line per delivery: time, sequence, event type, order, the handler's status, duration.
Failures are retried after 0.5 s, 1 s, 2 s… and reported. Ctrl-C (or SIGTERM, SIGHUP) prints the
cursor to resume from; resuming re-sends anything that was still in flight, so nothing is lost.
Each line names the event id, which lop events resend takes.
The signing secret is kept per forward URL between runs (owner-only, in your config folder).
A service that is not up yet is waited for. Exit code 1 if any delivery failed; 2 for a cursor
the service refuses (another stream's, one ahead of the stream, an old one).
lop events resend <event_id> --forward-to <url> sends one event again after a handler fix.

  $ lop listen --forward-to http://localhost:4000/hooks --events order.created,result.final
  $ lop listen --forward-to http://localhost:4000/hooks --from-cursor Aj5LUAZTAKlyAAAAAAAAACqxUfarFG-P2lRfIj5Z5gbc`,
    )
    .action(async (options, command: Command) => {
      run.json = Boolean(options.json);
      run.resume = (cursor) => listenResumeCommand(parseForwardTo(options.forwardTo), { events: options.events, skipVerify: options.skipVerify }, cursor);
      run.exitCode = await listen(
        api(command),
        {
          forwardTo: options.forwardTo,
          events: options.events,
          fromCursor: options.fromCursor,
          secret: options.secret,
          allowProduction: options.allowProduction,
          intervalMs: options.interval,
          maxAttempts: options.maxAttempts,
          skipVerify: Boolean(options.skipVerify),
          json: Boolean(options.json),
        },
        output,
        run.stop.signal,
        (cursor) => (run.cursor = cursor),
      );
    });

  withJson(
    program
      .command('trigger')
      .description(
        'Create a sandbox order from a fixture (registering its subject), run a scenario on it, and print the order, the events emitted and the final lifecycle. Given an event type instead, run the most direct scenario up to the step that emits it.',
      )
      .argument('<scenario|event_type>', 'a scenario name (lop scenarios lists them), e.g. corrected_result, or an event type, e.g. result.critical')
      .option('--fixture <contract>', 'the order fixture to create it from (lop fixtures lists them)', 'minimal')
      .option('--steps <n>', 'apply only this many steps (default: every remaining step)', positiveInteger(1000))
      .option('--order <order_id>', 'advance this sandbox order instead of creating one (with --steps, walks it step by step)')
      .addOption(jsonOption())
      .addHelpText('after', '\n  $ lop trigger corrected_result\n  $ lop trigger result.critical\n  $ lop trigger happy_path --steps 1 --json\n  $ lop trigger happy_path --order <order_id> --steps 1'),
  ).action(async (scenario: string, options, command: Command) => {
    run.exitCode = await trigger(api(command), scenario, { fixture: options.fixture, steps: options.steps, order: options.order, json: Boolean(options.json) }, output);
  });

  const events = program.command('events').description('Read the event stream.');
  withJson(
    events
      .command('tail')
      .description('Print the last events of the stream (or those after --from-cursor) and the cursor; --follow keeps printing new ones.')
      .addOption(new Option('-n, --limit <n>', 'how many events').argParser(positiveInteger(MAX_PAGE)).default(10))
      .option('--from-cursor <cursor>', 'the events after this cursor instead of the last ones', cursorValue('--from-cursor'))
      .option('-f, --follow', 'keep printing events as they arrive, waiting out a service restart (Ctrl-C stops and prints the cursor)', false)
      .addOption(intervalOption())
      .addOption(jsonOption('{events, next_cursor, has_more}; with --follow one event per line, exactly as the stream returned it')),
  ).action(async (options, command: Command) => {
    if (options.follow) run.resume = (cursor) => tailResumeCommand({ json: Boolean(options.json) }, cursor);
    run.exitCode = await tailEvents(
      api(command),
      { limit: options.limit, fromCursor: options.fromCursor, follow: options.follow, intervalMs: options.interval, json: Boolean(options.json) },
      output,
      run.stop.signal,
      (cursor) => (run.cursor = cursor),
    );
  });

  withJson(
    events
      .command('resend')
      .description('Deliver one event of the stream again to a local URL, exactly as lop listen would (after a handler fix), with the signing secret kept for that URL.')
      .argument('<event_id>', 'the event to send again (lop listen prints it for a failed delivery)')
      .requiredOption('--forward-to <url>', 'where to deliver, e.g. http://localhost:4000/hooks')
      .option('--secret <secret>', 'signing secret to use, kept for this URL from now on (default: the one kept for this URL)')
      .option('--allow-production', 'resend a production event (read-only) too; refused without it', false)
      .option('--skip-verify', "do not check the forward target's HTTPS certificate (a local handler with a self-signed one)", false)
      .addOption(new Option('--max-attempts <n>', 'attempts before it is reported failed').argParser(positiveInteger(10)).default(4))
      .addOption(jsonOption('one JSON object per delivery attempt'))
      .addHelpText(
        'after',
        '\nWith no secret kept for the URL (no lop listen to it yet) it refuses unless --secret names the one your handler verifies with.\nExit code 0 when delivered, 1 when it failed or no such event is in the stream, 2 for a malformed id or no secret.\n\n  $ lop events resend 6f1c…-… --forward-to http://localhost:4000/hooks',
      ),
  ).action(async (eventId: string, options, command: Command) => {
    run.exitCode = await resendEvent(
      api(command),
      eventId,
      { forwardTo: options.forwardTo, secret: options.secret, allowProduction: options.allowProduction, maxAttempts: options.maxAttempts, skipVerify: Boolean(options.skipVerify), json: Boolean(options.json) },
      output,
      run.stop.signal,
    );
  });

  const logs = program.command('logs').description('Read the sandbox request log.');
  withJson(
    logs
      .command('tail')
      .description('Print the latest sandbox requests of your API client (curl, lop, your integration, the console) and follow new ones as they are logged, until Ctrl-C.')
      .addOption(new Option('-n, --limit <n>', 'how many of the latest requests to print first').argParser(positiveInteger(200)).default(10))
      .option('--after <cursor>', 'the requests logged after this cursor (printed when a tail stops) instead of the latest ones', cursorValue('--after'))
      .addOption(new Option('--status <class>', 'only this status class').choices([...STATUS_CLASSES]))
      .option('--route <template>', 'only this route template, e.g. /v1/orders/{orderId} (an unknown template is refused, listing them)')
      .option('--request-id <id>', 'only this request')
      .option('--since <time>', 'only requests logged at or after this ISO 8601 time, e.g. 2026-11-28T09:00:00Z')
      .option('--until <time>', 'only requests logged before this ISO 8601 time')
      .addOption(new Option('--method <methods>', `only these methods: ${REQUEST_LOG_METHODS.join(', ')}, comma-separated`).argParser(nameList(REQUEST_LOG_METHODS)))
      .addOption(new Option('--source <sources>', `only these sources: ${REQUEST_LOG_SOURCES.join(', ')}, comma-separated (rest,console leaves out lop's own requests)`).argParser(nameList(REQUEST_LOG_SOURCES)))
      .addOption(
        new Option('--key-prefix <prefix>', 'only requests made with this key: its prefix, lop_test_ and four characters').argParser((text) => {
          if (!SANDBOX_KEY_PREFIX_PATTERN.test(text)) throw new InvalidArgumentError('lop_test_ and the next four characters of the key, e.g. lop_test_AbCd');
          return text;
        }),
      )
      .option('--search <text>', `only requests whose stored bodies contain this text, ignoring case (at most ${REQUEST_LOG_QUERY_MAX} characters; only what the log keeps of a body can match)`)
      .option('--no-follow', 'print and exit instead of following')
      .addOption(intervalOption())
      .addOption(jsonOption('each request on its own line, as the API returned it'))
      .addHelpText(
        'after',
        `
One line per request: time, method, route template, status, error code, duration, request_id,
key prefix, and where it came from (rest, lop, console). Sandbox keys only: production requests
are never logged. Requests appear a second or so after their response. A restarting service is
waited for. Ctrl-C (or SIGTERM, SIGHUP) prints the cursor to resume from with --after.

  $ lop logs tail
  $ lop logs tail --status 4xx --route /v1/orders
  $ lop logs tail --source rest,console --method POST --search not_orderable`,
      ),
  ).action(async (options, command: Command) => {
    const tail: LogsTailOptions = {
      limit: options.limit,
      after: options.after,
      status: options.status,
      route: options.route,
      requestId: options.requestId,
      since: options.since,
      until: options.until,
      method: options.method,
      source: options.source,
      keyPrefix: options.keyPrefix,
      search: options.search,
      follow: options.follow,
      intervalMs: options.interval,
      json: Boolean(options.json),
    };
    if (options.follow) run.resume = (cursor) => logsResumeCommand(tail, cursor);
    run.exitCode = await tailLogs(
      api(command),
      tail,
      output,
      run.stop.signal,
      (cursor) => (run.cursor = cursor),
    );
  });

  const orders = program.command('orders').description('Read orders.');
  withJson(orders.command('get').description('Print one order: lifecycle, next action, requisition, transmission, specimens.').argument('<order_id>').addOption(jsonOption())).action(
    async (orderId: string, options, command: Command) => {
      run.exitCode = await getOrder(api(command), orderId, { json: Boolean(options.json) }, output);
    },
  );

  const results = program.command('results').description('Read results.');
  withJson(
    results
      .command('get')
      .description("Print an order's result collection: pending or current version, and the version lineage; --fhir prints a released version as a FHIR R4 Bundle instead.")
      .argument('<order_id>')
      .addOption(jsonOption())
      .option('--fhir', 'print the FHIR R4 Bundle (JSON) of the current released version instead')
      .option('--result <result_id>', 'with --fhir: the released version to print, superseded ones included'),
  ).action(async (orderId: string, options, command: Command) => {
    if (options.result !== undefined && !options.fhir) throw new UsageError('--result needs --fhir');
    run.exitCode = options.fhir
      ? await getResultFhir(api(command), orderId, { result: options.result }, output)
      : await getResults(api(command), orderId, { json: Boolean(options.json) }, output);
  });

  withJson(program.command('scenarios').description('List the sandbox scenarios lop trigger can run.').addOption(jsonOption())).action(async (options, command: Command) => {
    run.exitCode = await scenarios(api(command), { json: Boolean(options.json) }, output);
  });

  withJson(program.command('fixtures').description('List the sandbox order fixtures lop trigger can create an order from.').addOption(jsonOption())).action(async (options, command: Command) => {
    run.exitCode = await fixtures(api(command), { json: Boolean(options.json) }, output);
  });

  return program;
}
