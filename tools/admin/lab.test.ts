import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixtures, unique } from '@lop/testing';
import { admin, openTestDatabase } from './testing/run-admin';
import { expectFailure, expectUsageError } from './testing/expect-error';

const database = openTestDatabase();
afterAll(() => database.close());

const f = fixtures(database.db);
const folder = mkdtempSync(join(tmpdir(), 'lab-cli-'));

/**
 * A laboratory, client, program (granted to the client: an order of a program the client may not
 * read emits no event) and test of its own, and one order in `received` (as a partner would have
 * placed it) or the given state.
 */
async function newOrder(lifecycleDetail = 'received'): Promise<string> {
  const laboratory = await f.laboratory();
  const client = await f.client(laboratory.id);
  const program = await f.program(laboratory.id);
  await f.grant(client.client_id, program);
  const item = await f.item(program.id);
  return (await f.order(client.client_id, program, item, { lifecycleDetail })).id;
}

function resultFile(body: unknown): string {
  const path = join(folder, `${unique('result')}.json`);
  writeFileSync(path, typeof body === 'string' ? body : JSON.stringify(body));
  return path;
}

const RESULT = {
  source_result_id: 'LIS-R-100',
  performing_laboratory_system: 'Sunquest LIS 8',
  observations: [{ analyte: 'LDL Cholesterol', value: '<10', unit: 'mg/dL', reference_interval: '0-99' }],
  report: { content_type: 'application/pdf', content_base64: 'JVBERi0xLjQK' },
};

async function ok(...args: string[]) {
  const run = await admin(...args);
  expect(run.code, run.stderr).toBe(0);
  return run;
}
const json = async (...args: string[]) => (await ok(...args, '--json')).json();
const eventTypes = (outcome: { events: { type: string }[] }) => outcome.events.map((e) => e.type);

// Each command is a separate process (about 1.5 s each).
describe('admin lab', { timeout: 120_000 }, () => {
  it('walks an order from transmission to a released critical final result (--json)', async () => {
    const orderId = await newOrder();
    // received → transmitted changes only lifecycle_detail, which no event shows: nothing is emitted.
    expect(eventTypes(await json('lab', 'transmit', orderId))).toEqual([]);
    const acked = await json('lab', 'acknowledge', orderId, '--status', 'accepted', '--external-order-ref', 'LIS-1', '--requisition-id', 'REQ-1');
    expect(acked.order).toMatchObject({ lifecycle_detail: 'accepted', requisition: { state: 'issued', requisition_id: 'REQ-1' }, transmission: { ack_status: 'accepted', external_order_ref: 'LIS-1', attempt_no: 1 } });
    expect((await json('lab', 'accept', orderId)).order.lifecycle_detail).toBe('awaiting_collection');
    const collected = await json('lab', 'collect', orderId, '--specimen-code', 'TUBE-9', '--collected-at', '2025-03-05T08:15:00+01:00');
    expect(collected.specimen).toMatchObject({ specimen_code: 'TUBE-9', specimen_type: 'serum', status: 'collected', collected_at: '2025-03-05T07:15:00.000Z' });
    expect(eventTypes(collected)).toEqual(['specimen.updated', 'order.updated']);
    // They occurred when the specimen was collected, not when the command ran.
    const occurred = await database.sql<{ at: string }[]>`select occurred_at as at from events where id in ${database.sql(collected.events.map((e: { event_id: string }) => e.event_id))}`;
    expect(occurred.map((r) => new Date(r.at).toISOString())).toEqual(['2025-03-05T07:15:00.000Z', '2025-03-05T07:15:00.000Z']);
    expect((await json('lab', 'ship', orderId)).order.lifecycle_detail).toBe('in_transit');
    expect((await json('lab', 'receive', orderId)).order.lifecycle_detail).toBe('received_by_laboratory');
    expect((await json('lab', 'accession', orderId, '--accession-number', 'ACC-9')).order).toMatchObject({ lifecycle_detail: 'in_testing', accession: { accession_number: 'ACC-9' } });

    const recorded = await json('lab', 'record-result', orderId, '--file', resultFile(RESULT));
    expect(recorded.result).toMatchObject({ status: 'recorded', version: null, observation_count: 1, report_content_type: 'application/pdf' });
    expect(recorded.events).toEqual([]);
    const released = await json('lab', 'release', recorded.result.result_id, '--as', 'final', '--critical');
    expect(released.result).toMatchObject({ status: 'released', version: 1, version_type: 'initial', state: 'final', is_critical: true });
    expect(eventTypes(released)).toEqual(['result.final', 'result.critical', 'order.updated']);
    expect(released.order).toMatchObject({ lifecycle: 'completed', lifecycle_detail: 'final_results' });

    const shown = await json('lab', 'show', orderId);
    expect(shown.results).toEqual([released.result]);
    expect(shown.order.lifecycle_detail).toBe('final_results');
  });

  it('transmit retries a failed transmission: a new attempt, and the laboratory-owned exception resolved', async () => {
    const orderId = await newOrder();
    await ok('lab', 'transmit', orderId);
    const failed = await json('lab', 'fail-transmission', orderId, '--reason', 'interface engine timeout');
    expect(failed.order).toMatchObject({ lifecycle: 'pending', lifecycle_detail: 'transmission_failed', next_action: 'wait_for_laboratory' });
    expect(failed.exception).toMatchObject({ category: 'transmission_failed', owner_role: 'laboratory', retryable: true, status: 'open' });
    expect(failed.events).toEqual([]);
    const retried = await json('lab', 'transmit', orderId);
    expect(retried.order).toMatchObject({ lifecycle_detail: 'transmitted', transmission: { status: 'sent', attempt_no: 2 } });
    const listed = await json('lab', 'exceptions', 'list', orderId);
    expect(listed.exceptions).toEqual([expect.objectContaining({ category: 'transmission_failed', status: 'resolved', resolution_text: 'The laboratory transmitted the order again.' })]);
  });

  it('prints readable text by default: the new state, what changed and the events', async () => {
    const orderId = await newOrder();
    const run = await ok('lab', 'accept', orderId);
    expect(run.stdout).toContain(`Order ${orderId} is active / awaiting_collection (next: collect_specimen).`);
    expect(run.stdout).toMatch(/events\s+order\.updated/);
    expect(() => JSON.parse(run.stdout)).toThrow();
    const shown = await ok('lab', 'show', orderId);
    expect(shown.stdout).toMatch(/requisition\s+issued REQ-/);
    expect(shown.stdout).toContain('Results:');
  });

  it('refuses an illegal transition with the transition table’s reason (exit 1) and changes nothing', async () => {
    const orderId = await newOrder();
    expectFailure(await admin('lab', 'ship', orderId), /^error: cannot ship an order whose state is received \(allowed from: specimen_collected\)\n$/);
    expectFailure(await admin('lab', 'release', randomUUID(), '--as', 'final'), /no result/);
    const [row] = await database.sql`select lifecycle_detail from orders where id = ${orderId}`;
    expect(row.lifecycle_detail).toBe('received');
    const [events] = await database.sql`select count(*)::int as n from events where order_id = ${orderId}`;
    expect(events.n).toBe(0);
  });

  it('reject-specimen opens a partner exception; exceptions open, list and resolve keep notes for operators', async () => {
    const orderId = await newOrder();
    await ok('lab', 'accept', orderId);
    await ok('lab', 'collect', orderId);
    const rejected = await json('lab', 'reject-specimen', orderId, '--reason', 'hemolyzed');
    expect(rejected.order.lifecycle_detail).toBe('recollection_required');
    expect(rejected.specimen).toMatchObject({ status: 'rejected', rejection_reason: 'hemolyzed' });
    expect(rejected.exception).toMatchObject({ category: 'specimen_rejected', owner_role: 'partner', status: 'open' });
    expect(eventTypes(rejected)).toEqual(['specimen.updated', 'integration.action_required']);

    const opened = await json('lab', 'exceptions', 'open', orderId, '--category', 'collection_delayed', '--severity', 'warning', '--notes', 'courier late');
    expect(opened.exception).toMatchObject({ category: 'collection_delayed', severity: 'warning', owner_role: 'laboratory', operator_notes: 'courier late' });
    expect(opened.events).toEqual([]);
    const resolved = await json('lab', 'exceptions', 'resolve', opened.exception.exception_id, '--resolution', 'picked up');
    expect(resolved.exception).toMatchObject({ status: 'resolved', resolution_text: 'picked up', operator_notes: 'courier late' });
    const listed = await json('lab', 'exceptions', 'list', orderId);
    expect(listed.exceptions.map((e: any) => [e.category, e.status])).toEqual([
      ['collection_delayed', 'resolved'],
      ['specimen_rejected', 'open'],
    ]);
    expectFailure(await admin('lab', 'exceptions', 'resolve', opened.exception.exception_id, '--resolution', 'again'), /already resolved/);

    const cancelled = await json('lab', 'cancel', orderId);
    expect(cancelled.order).toMatchObject({ lifecycle: 'cancelled', lifecycle_detail: 'cancelled_by_laboratory' });
    expect(eventTypes(cancelled)).toEqual(['order.cancelled']);
  });

  it('a cancelled order is closed to the laboratory: a partner-owned exception is refused (exit 1) and the order still asks nothing of the partner', async () => {
    const orderId = await newOrder();
    await ok('lab', 'cancel', orderId);
    const [before] = await database.sql`select count(*)::int as n from events where order_id = ${orderId}`;
    expectFailure(
      await admin('lab', 'exceptions', 'open', orderId, '--category', 'order_information_required'),
      /^error: cannot open a partner-owned order_information_required exception on an order whose state is cancelled_by_laboratory: the order is cancelled, and a closed order \(cancelled or completed\) gives the partner nothing more to do\n$/,
    );
    const shown = await json('lab', 'show', orderId);
    expect(shown.order).toMatchObject({ lifecycle: 'cancelled', next_action: 'none' });
    expect(shown.exceptions).toEqual([]);
    const [after] = await database.sql`select count(*)::int as n from events where order_id = ${orderId}`;
    expect(after.n).toBe(before.n);
  });

  it('usage errors (exit 2): malformed ids, missing options, unreadable or invalid result files', async () => {
    const orderId = await newOrder();
    expectUsageError(await admin('lab', 'transmit', 'order-1'), /order_id.*expected a uuid/);
    expectUsageError(await admin('lab', 'release', randomUUID()), /required option '--as <kind>'/);
    expectUsageError(await admin('lab', 'release', randomUUID(), '--as', 'draft'), /Allowed choices are partial, final, corrected, amended/);
    expectUsageError(await admin('lab', 'reject-specimen', orderId), /required option '--reason <text>'/);
    expectUsageError(await admin('lab', 'record-result', orderId, '--file', join(folder, 'missing.json')), /cannot read --file .*ENOENT/);
    expectUsageError(await admin('lab', 'record-result', orderId, '--file', resultFile('{not json')), /is not valid JSON/);
    expectUsageError(
      await admin('lab', 'record-result', orderId, '--file', resultFile({ ...RESULT, observations: [{ analyte: 'Glucose', value: '98', loinc: '2345-7' }] })),
      /observations\[0\]: LOINC codes are not modeled/,
    );
    const [row] = await database.sql`select count(*)::int as n from result_versions where order_id = ${orderId}`;
    expect(row.n).toBe(0);
  });

  it('record-result takes observation values as text: a JSON number is a usage error naming its place, and text is stored character for character', async () => {
    const orderId = await newOrder('in_testing');
    // Written as a laboratory system would print it; JSON.parse would turn 1.50 into 1.5.
    const withNumbers = `{"source_result_id": "LIS-R-7", "performing_laboratory_system": "Sunquest LIS 8", "observations": [
      {"analyte": "Glucose", "value": "098", "unit": "mg/dL"},
      {"analyte": "Potassium", "value": 1.50, "unit": "mmol/L", "reference_interval": {"low": "3.5", "high": 5.1}}]}`;
    const refused = await admin('lab', 'record-result', orderId, '--file', resultFile(withNumbers));
    expectUsageError(refused, /observations\[1\]\.value: must be a string, not the JSON number 1\.5: send the value as the laboratory system printed it, e\.g\. "1\.50"/);
    expect(refused.stderr).toMatch(/observations\[1\]\.reference_interval\.high: must be a string, not the JSON number 5\.1/);
    const [none] = await database.sql`select count(*)::int as n from result_versions where order_id = ${orderId}`;
    expect(none.n).toBe(0);

    const asText = withNumbers.replace('1.50', '"1.50"').replace('5.1}', '"12345678901234567890"}');
    const recorded = await json('lab', 'record-result', orderId, '--file', resultFile(asText));
    const [stored] = await database.sql`select observations from result_versions where id = ${recorded.result.result_id}`;
    expect(stored.observations[1]).toEqual({ analyte: 'Potassium', value: '1.50', unit: 'mmol/L', reference_interval: { low: '3.5', high: '12345678901234567890' } });
  });
});
