import { describe, expect, it } from 'vitest';
import { partnerRouter } from './index';

/**
 * trpc-to-openapi's REST adapter sets `coerce` on every number, boolean, bigint and date field it
 * reaches in an input schema (through optional, nullable, default, array and nested objects), on
 * the schema object the tRPC door shares. A coerced number reads `"0x10"` as 16 and `true` as 1.
 * This walks the inputs the same way and names every field it would change.
 */
type Def = { type: string; innerType?: unknown; element?: unknown; getter?: () => unknown; shape?: Record<string, unknown> };
const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def;

function unwrap(schema: unknown): unknown {
  const def = defOf(schema);
  if (['optional', 'nullable', 'default', 'prefault'].includes(def.type)) return unwrap(def.innerType);
  if (def.type === 'array') return unwrap(def.element);
  if (def.type === 'lazy') return unwrap(def.getter!());
  return schema;
}

function coercibleFields(schema: unknown, path: string): string[] {
  const inner = unwrap(schema);
  const def = defOf(inner);
  if (['number', 'boolean', 'bigint', 'date'].includes(def.type)) return [`${path} (${def.type})`];
  if (def.type !== 'object') return [];
  const shape = (inner as { shape: Record<string, unknown> }).shape;
  return Object.entries(shape).flatMap(([key, field]) => coercibleFields(field, path ? `${path}.${key}` : key));
}

describe('partner procedure inputs', () => {
  const procedures = Object.entries(partnerRouter._def.procedures as unknown as Record<string, { _def: { inputs: unknown[] } }>);

  it('are found (the walk sees the real router)', () => {
    expect(procedures.map(([name]) => name)).toEqual(expect.arrayContaining(['events.list', 'sandbox.simulate', 'console.orders']));
  });

  it('have no field the REST adapter would switch to coercion (use queryInteger or jsonInteger)', () => {
    const found = procedures.flatMap(([name, procedure]) => procedure._def.inputs.flatMap((input) => coercibleFields(input, '').map((field) => `${name}: ${field}`)));
    expect(found).toEqual([]);
  });
});
