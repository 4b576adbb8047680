import { afterAll, describe, expect, it } from 'vitest';
import { TRPCError } from '@trpc/server';
import { partnerRouter } from '../routers';
import { laboratoryCaller, laboratoryRouter } from '../routers-internal/laboratory';
import { newOrder, openTestDatabase, resultBody } from '../../testing/orders';

const connection = openTestDatabase();
const lab = laboratoryCaller({ db: connection.db });
afterAll(() => connection.close());

describe('the internal laboratory router', () => {
  it('is not part of the partner router: no partner procedure reaches a laboratory operation', () => {
    const partnerProcedures = Object.values(partnerRouter._def.procedures as Record<string, unknown>);
    const labProcedures = laboratoryRouter._def.procedures as Record<string, unknown>;
    expect(Object.keys(labProcedures)).toEqual(expect.arrayContaining(['transmit', 'releaseResult', 'exceptions.open']));
    for (const [path, procedure] of Object.entries(labProcedures)) expect(partnerProcedures, path).not.toContain(procedure);
  });

  it('answers an illegal transition as CONFLICT in the transition table’s words', async () => {
    const { order } = await newOrder(connection.db);
    const error = await lab.ship({ order_id: order.id }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCError);
    expect(error).toMatchObject({ code: 'CONFLICT', message: 'cannot ship an order whose state is received (allowed from: specimen_collected)' });
  });

  it('answers an unknown order as NOT_FOUND and bad input as BAD_REQUEST', async () => {
    await expect(lab.transmit({ order_id: '00000000-0000-4000-8000-000000000003' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(lab.transmit({ order_id: 'nope' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    const { order } = await newOrder(connection.db);
    await expect(lab.recordResult({ ...resultBody({ observations: [{ loinc: '1-1' }] }), order_id: order.id })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('refuses an observation value sent as a JSON number: BAD_REQUEST naming the observation in one readable line, nothing stored', async () => {
    const { order } = await newOrder(connection.db);
    const observations = [{ analyte: 'Glucose', value: '098' }, { analyte: 'Creatinine', value: '0.91' }, { analyte: 'Potassium', value: 1.5, unit: 'mmol/L' }];
    const error = await lab.recordResult({ ...resultBody({ observations }), order_id: order.id }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCError);
    expect(error).toMatchObject({
      code: 'BAD_REQUEST',
      message: 'observations[2].value: must be a string, not the JSON number 1.5: send the value as the laboratory system printed it, e.g. "1.50" (a JSON number loses how it was written: 1.50 arrives as 1.5)',
    });
    expect((await lab.show({ order_id: order.id })).results).toEqual([]);
  });

  it('walks an order from received to a released final result', async () => {
    const { order } = await newOrder(connection.db);
    const id = { order_id: order.id };
    await lab.accept(id);
    await lab.collect(id);
    await lab.receive(id);
    await lab.accession(id);
    const recorded = await lab.recordResult({ ...resultBody(), ...id });
    const released = await lab.releaseResult({ result_id: recorded.result.result_id, as: 'final' });
    expect(released.order.lifecycle_detail).toBe('final_results');
    const shown = await lab.show(id);
    expect(shown.results).toEqual([released.result]);
  });
});
