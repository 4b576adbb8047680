import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { envelopeOf, synchronousFirst } from './envelope';

describe('output validation (envelopeOf): what tRPC runs on every response', () => {
  const output = envelopeOf(z.object({ order_id: z.string(), state: z.enum(['pending', 'done']) }));

  it('still guards: an undeclared field never reaches the partner, and a wrong value is refused', async () => {
    const parsed = await output.parseAsync({ data: { order_id: 'o1', state: 'pending', patient: { name: 'Ada' } }, request_id: 'req_1' });
    expect(parsed).toEqual({ data: { order_id: 'o1', state: 'pending' }, request_id: 'req_1' });
    await expect(output.parseAsync({ data: { order_id: 'o1', state: 'lost' }, request_id: 'req_1' })).rejects.toBeInstanceOf(z.ZodError);
  });

  it('checks synchronously, where zod runs its compiled parser, though tRPC asks for parseAsync', async () => {
    const schema = synchronousFirst(z.object({ a: z.string() }));
    const parse = vi.spyOn(schema, 'parse');
    await schema.parseAsync({ a: 'x' });
    expect(parse).toHaveBeenCalledTimes(1);
  });

  it('falls back to the asynchronous parse for a schema with an asynchronous check', async () => {
    const schema = synchronousFirst(z.object({ a: z.string() }).refine(async (v) => v.a !== 'no', 'refused'));
    await expect(schema.parseAsync({ a: 'yes' })).resolves.toEqual({ a: 'yes' });
    await expect(schema.parseAsync({ a: 'no' })).rejects.toBeInstanceOf(z.ZodError);
  });
});
