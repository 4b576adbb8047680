import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@lop/db';
import { buildProgram } from './program';
import { rawArrayElements } from './raw-json';
import { lop, REPO_ROOT, startLop, startService, type TestService } from './testing/harness';

/** The readers, lop trigger, errors and exit codes, against the real API. */

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service?.close();
});

describe('usage: --help everywhere, exit code 2 for what cannot run as asked', () => {
  it('every command answers --help with exit code 0', async () => {
    const commands = [[], ['listen'], ['trigger'], ['events'], ['events', 'tail'], ['logs'], ['logs', 'tail'], ['orders'], ['orders', 'get'], ['results'], ['results', 'get'], ['scenarios'], ['fixtures']];
    const results = await Promise.all(commands.map((command) => lop(service, [...command, '--help'])));
    for (const [i, result] of results.entries()) {
      expect(result.code, commands[i].join(' ')).toBe(0);
      expect(result.stdout).toContain(`Usage: lop ${commands[i].join(' ')}`.trim());
    }
    expect(results[0].stdout).toMatch(/Exit codes: 0 success; 1 failure .*\n2 usage/);
  });

  it('`lop help <command>` answers as `lop <command> --help` does: the same text, exit code 0', async () => {
    // A subcommand's help is its parent's help command: `lop events help tail`.
    for (const [help, command] of [
      [['help', 'listen'], ['listen']],
      [['help', 'trigger'], ['trigger']],
      [['help', 'events'], ['events']],
      [['events', 'help', 'tail'], ['events', 'tail']],
    ]) {
      const [viaHelp, viaOption] = await Promise.all([lop(service, help), lop(service, [...command, '--help'])]);
      expect(viaHelp.code, `lop ${help.join(' ')}: ${viaHelp.stderr}`).toBe(0);
      expect(viaHelp.stdout).toContain(`Usage: lop ${command.join(' ')}`);
      expect(viaHelp.stdout).toBe(viaOption.stdout);
    }
  });

  it('docs/cli.md names every command and every option', () => {
    const guide = readFileSync(join(REPO_ROOT, 'docs/cli.md'), 'utf8');
    const program = buildProgram({ out: () => undefined, err: () => undefined, style: {} as never }, { exitCode: 0, stop: new AbortController(), cursor: null, resume: null, json: false });
    const walk = (command: Command, path: string[]): void => {
      for (const option of command.options) if (option.long && option.long !== '--version') expect(guide, `${path.join(' ')} ${option.long}`).toContain(option.long);
      if (command.commands.length === 0) expect(guide, path.join(' ')).toContain(`lop ${path.join(' ')}`);
      for (const sub of command.commands) walk(sub, [...path, sub.name()]);
    };
    walk(program, []);
  });

  it('in the repository the bin runs the sources without a build step (what `npx lop` runs)', async () => {
    const help = await lop(service, ['--help'], {}, { via: 'bin' });
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: lop \[options\] \[command\]/);
    const scenarios = await lop(service, ['scenarios', '--json'], {}, { via: 'bin' });
    expect(scenarios.code, scenarios.stderr).toBe(0);
    expect(JSON.parse(scenarios.stdout)).toEqual((await service.get('/v1/sandbox/scenarios')).body.data);
  });

  it('no command, an unknown option or value, no key, an unknown scenario or fixture: exit code 2 with a reason', async () => {
    const cases: [string[], Record<string, string | undefined>, RegExp][] = [
      [[], {}, /Usage: lop/],
      [['scenarios', '--bogus'], {}, /unknown option '--bogus'/],
      [['listen'], {}, /required option '--forward-to <url>' not specified/],
      [['listen', '--forward-to', 'http://127.0.0.1:9/h', '--events', 'order.created,result.finale'], {}, /unknown event type result\.finale; one or more of: order\.created/],
      [['listen', '--forward-to', 'ftp://127.0.0.1/h'], {}, /--forward-to must be an http:\/\/ or https:\/\/ URL/],
      [['events', 'tail', '-n', '0'], {}, /a whole number from 1 to 500/],
      // An empty cursor (an unset shell variable) says so, rather than "see details" with none.
      [['listen', '--forward-to', 'http://127.0.0.1:9/h', '--from-cursor', ''], {}, /--from-cursor needs a cursor .*it was given an empty value/],
      [['events', 'tail', '--from-cursor', ' '], {}, /--from-cursor needs a cursor/],
      [['logs', 'tail', '--after', ''], {}, /--after needs a cursor/],
      [['trigger', 'result.nope'], {}, /no scenario emits result\.nope; lop trigger takes one of these event types: order\.created, .*result\.critical.*order\.cancelled/],
      [['trigger', 'result.critical', '--steps', '2'], {}, /--order and --steps take a scenario, not an event type/],
      [['scenarios'], { LOP_API_KEY: undefined }, /error: usage: no API key: pass --api-key or set LOP_API_KEY/],
      [['scenarios', '--base-url', 'http://127.0.0.1:3000/somewhere'], {}, /the base URL must be \{origin\}\/api\/public\/partner/],
      [['trigger', 'no_such_scenario'], {}, /unknown scenario no_such_scenario; one of: happy_path/],
      [['trigger', 'happy_path', '--fixture', 'maximal'], {}, /unknown fixture maximal; one of: minimal, provider, patient, aoe/],
    ];
    const results = await Promise.all(cases.map(([args, env]) => lop(service, args, env)));
    for (const [i, [args, , message]] of cases.entries()) {
      expect(results[i].code, args.join(' ')).toBe(2);
      expect(results[i].stderr, args.join(' ')).toMatch(message);
    }
  });

  it('the key and base URL come from the options as well as from LOP_API_KEY and LOP_BASE_URL; a base URL ending in /v1 or an origin is understood', async () => {
    const origin = new URL(service.baseUrl).origin;
    const baseUrls = [service.baseUrl, `${service.baseUrl}/v1`, origin];
    const results = await Promise.all(
      baseUrls.map((baseUrl) => lop(service, ['scenarios', '--json', '--api-key', service.demo.sandbox_key, '--base-url', baseUrl], { LOP_API_KEY: undefined, LOP_BASE_URL: undefined })),
    );
    for (const [i, result] of results.entries()) expect(result.code, `${baseUrls[i]}: ${result.stderr}`).toBe(0);
  });
});

describe('the readers: a table by default, --json that parses to what the API returns', () => {
  let orderId: string;

  beforeAll(async () => {
    const triggered = await lop(service, ['trigger', 'corrected_result', '--json']);
    expect(triggered.code, triggered.stderr).toBe(0);
    orderId = JSON.parse(triggered.stdout).order_id;
  });

  it('scenarios, fixtures, orders get, results get: --json is the data of the API response', async () => {
    const reads: [string[], string][] = [
      [['scenarios'], '/v1/sandbox/scenarios'],
      [['orders', 'get', orderId], `/v1/orders/${orderId}`],
      [['results', 'get', orderId], `/v1/orders/${orderId}/results`],
    ];
    for (const [args, path] of reads) {
      const result = await lop(service, [...args, '--json']);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual((await service.get(path)).body.data);
    }
    // Fixture bodies carry a fresh external_order_id on every listing: compare the rest.
    const fixtures = JSON.parse((await lop(service, ['fixtures', '--json'])).stdout);
    const expected = (await service.get('/v1/sandbox/order-fixtures')).body.data;
    const withoutIds = (list: any[]) => list.map((f) => ({ ...f, body: f.body && { ...f.body, external_order_id: undefined } }));
    expect(withoutIds(fixtures)).toEqual(withoutIds(expected));
  });

  it('results get --fhir: the FHIR Bundle of the current version, or of --result; --result alone is a usage error', async () => {
    const collection = (await service.get(`/v1/orders/${orderId}/results`)).body.data;
    const current = await lop(service, ['results', 'get', orderId, '--fhir']);
    expect(current.code, current.stderr).toBe(0);
    expect(JSON.parse(current.stdout)).toEqual((await service.get(`/v1/orders/${orderId}/results/${collection.current_result_id}/fhir`)).body);
    // The API's own text (indented by _pretty), not a re-serialisation: a quantity's 1.50 stays 1.50.
    expect(current.stdout.trim()).toBe((await service.get(`/v1/orders/${orderId}/results/${collection.current_result_id}/fhir?_pretty=true`)).text.trim());
    expect(JSON.parse(current.stdout).entry[0].resource.status).toBe('corrected');
    const first = await lop(service, ['results', 'get', orderId, '--fhir', '--result', collection.version_lineage[0].result_id]);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).entry[0].resource.status).toBe('final');
    const alone = await lop(service, ['results', 'get', orderId, '--result', collection.current_result_id]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--result needs --fhir/);
    const unknown = await lop(service, ['results', 'get', orderId, '--fhir', '--result', '00000000-0000-4000-8000-000000000000']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/not_found/);
  });

  it('events tail --json: the last events of the stream and the cursor after them; --from-cursor reads on from one', async () => {
    const tail = await lop(service, ['events', 'tail', '--json', '-n', '3']);
    expect(tail.code, tail.stderr).toBe(0);
    const page = JSON.parse(tail.stdout);
    const everything = (await service.get('/v1/events?limit=500')).body.data;
    expect(page).toEqual({ events: everything.events.slice(-3), next_cursor: everything.next_cursor, has_more: false });
    expect(page.events.at(-1).data.order_id).toBe(orderId);

    const fromStart = JSON.parse((await lop(service, ['events', 'tail', '--json', '-n', '2', '--from-cursor', (await service.get('/v1/events?limit=1')).body.data.next_cursor])).stdout);
    expect(fromStart.events).toEqual(everything.events.slice(1, 3));
    expect(fromStart.has_more).toBe(true);
  });

  it('events tail --follow --json prints each new event on its own line exactly as the stream returned it, and the cursor on Ctrl-C', async () => {
    const tail = startLop(service, ['events', 'tail', '--follow', '--json', '-n', '1', '--interval', '100']);
    await tail.line(() => true);
    const before = (await service.get('/v1/events?limit=500')).body.data.next_cursor;
    const triggered = await lop(service, ['trigger', 'happy_path', '--steps', '1', '--json']);
    expect(triggered.code, triggered.stderr).toBe(0);
    const page = await service.get(`/v1/events?cursor=${before}`);
    const raws = rawArrayElements(page.text, ['data', 'events']);
    await tail.line((l) => l === raws.at(-1));
    const stopped = await tail.interrupt();
    expect(stopped.code).toBe(0);
    expect(stopped.stdout.split('\n').filter(Boolean).slice(-raws.length)).toEqual(raws);
    const next = page.body.data.next_cursor;
    expect(stopped.stderr).toBe(`cursor: ${next}\nresume with: lop events tail --follow --from-cursor ${next} --json\n`);
  });

  it('the tables name what matters: the lifecycle, the version lineage, the event types', async () => {
    const order = await lop(service, ['orders', 'get', orderId]);
    expect(order.stdout).toMatch(new RegExp(`order_id +${orderId}`));
    expect(order.stdout).toMatch(/lifecycle +completed \/ corrected_results/);
    const results = await lop(service, ['results', 'get', orderId]);
    expect(results.stdout).toMatch(/current +v2 /);
    expect(results.stdout).toMatch(/v1 +final .*superseded by/);
    const events = await lop(service, ['events', 'tail', '-n', '2']);
    expect(events.stdout).toMatch(/^SEQ +OCCURRED AT +TYPE +EVENT +ORDER +DETAIL/);
    expect(events.stdout).toContain('result.corrected');
    // The event id, which lop events resend takes, is on each row.
    const lastTwo = (await service.get('/v1/events?limit=500')).body.data.events.slice(-2);
    for (const event of lastTwo) expect(events.stdout).toMatch(new RegExp(`#${event.sequence} +\\S+ +${event.type.replace('.', '\\.')} +${event.event_id} +${event.data.order_id}`));
    expect(events.stdout).toMatch(/next cursor: \S+/);
    const scenarios = await lop(service, ['scenarios']);
    expect(scenarios.stdout).toMatch(/corrected_result +11 +corrected_results/);
    // Not a terminal: no colour codes.
    for (const output of [order, results, events, scenarios]) expect(output.stdout).not.toContain('\x1b[');
  });

  it('lop trigger --steps walks an order step by step, and --order continues the same order', async () => {
    const first = JSON.parse((await lop(service, ['trigger', 'happy_path', '--steps', '1', '--json'])).stdout);
    expect(first).toMatchObject({ created: true, steps_applied: 1, steps_completed: 1 });
    expect(first.events[0]).toBe('order.created');
    const rest = await lop(service, ['trigger', 'happy_path', '--order', first.order_id, '--json']);
    expect(rest.code, rest.stderr).toBe(0);
    expect(JSON.parse(rest.stdout)).toMatchObject({ order_id: first.order_id, created: false, fixture: null, steps_remaining: 0, lifecycle: 'completed', lifecycle_detail: 'final_results' });
    // Every scenario step already ran: the API's refusal, as the API words it.
    const again = await lop(service, ['trigger', 'happy_path', '--order', first.order_id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error: simulation_not_allowed: .* \(request_id req_\w+\)\n {2}scenario_completed/);
  });
});

describe('lop trigger <event_type>: the most direct scenario that emits it, from the service\'s list', () => {
  /** The step (1-based) at which a scenario first emits `type`, from the API's own list. */
  const firstStep = (scenario: any, type: string) => scenario.step_details.findIndex((d: any) => d.events.includes(type)) + 1;

  it('result.critical and order.cancelled run a scenario up to the step that emits them, and the stream has that event for the new order', async () => {
    const list = (await service.get('/v1/sandbox/scenarios')).body.data as any[];
    for (const type of ['result.critical', 'order.cancelled']) {
      // The expectation from the list itself: the fewest steps to the event, then the shorter scenario.
      const emitting = list.filter((s) => firstStep(s, type) > 0).sort((a, b) => firstStep(a, type) - firstStep(b, type) || a.steps - b.steps);
      expect(emitting.length, type).toBeGreaterThan(0);
      const expected = emitting[0];

      const before = (await service.get('/v1/events?limit=500')).body.data.next_cursor;
      const run = await lop(service, ['trigger', type, '--json']);
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report).toMatchObject({ created: true, event_type: type, scenario: expected.scenario, steps_applied: firstStep(expected, type) });
      expect(report.events).toContain(type);
      const stream = (await service.get(`/v1/events?cursor=${before}&limit=500`)).body.data.events as any[];
      expect(stream.filter((e) => e.data.order_id === report.order_id).map((e) => e.type)).toContain(type);
    }

    const text = await lop(service, ['trigger', 'result.critical']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/event type +result\.critical +\(the most direct scenario to it: critical_result, up to step \d+\)/);
  });

  it('order.created creates the order and runs no scenario', async () => {
    const run = await lop(service, ['trigger', 'order.created', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ created: true, event_type: 'order.created', scenario: null, steps_applied: 0, events: ['order.created'], lifecycle: 'pending' });
  });
});

describe('errors read like the API: code, message, request_id; exit code 1', () => {
  it('an unknown order: not_found with the request id, as text or as the JSON envelope', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const text = await lop(service, ['orders', 'get', unknown]);
    expect(text.code).toBe(1);
    expect(text.stdout).toBe('');
    expect(text.stderr).toMatch(/^error: not_found: .+ \(request_id req_\w+\)\n$/);

    const json = await lop(service, ['results', 'get', unknown, '--json']);
    expect(json.code).toBe(1);
    const envelope = JSON.parse(json.stderr);
    expect(envelope).toMatchObject({ error: { code: 'not_found' }, request_id: expect.stringMatching(/^req_/) });
  });

  it('a revoked or unknown key: unauthorized; a service that is not there: unreachable', async () => {
    const unauthorized = await lop(service, ['scenarios'], { LOP_API_KEY: 'lop_test_notakeyatall0000000000000000000' });
    expect(unauthorized.code).toBe(1);
    expect(unauthorized.stderr).toMatch(/^error: unauthorized: .+ \(request_id req_\w+\)/);

    const closed = await freePort();
    const unreachable = await lop(service, ['fixtures', '--base-url', `http://127.0.0.1:${closed}/api/public/partner`]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain(`error: unreachable: cannot reach http://127.0.0.1:${closed}/api/public/partner (ECONNREFUSED)`);
  });
});
