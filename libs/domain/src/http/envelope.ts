import { z } from 'zod';

/** The success envelope every partner response uses (DESIGN §3); the output schema of every procedure. */
export function envelopeOf<T extends z.ZodType>(data: T) {
  return synchronousFirst(
    z.object({
      data,
      request_id: z.string().meta({ description: 'Identifier of this request; also in the X-Request-Id header.', example: 'req_4f9c1d2e8a7b6c5d4e3f2a1b' }),
      cursor: z.string().nullable().optional().meta({ description: 'Cursor to continue a list from; null when there is nothing more.' }),
    }),
  );
}

/**
 * tRPC validates a procedure's output with the schema's parseAsync, and zod takes its compiled
 * path (a parser generated once per object shape) only for synchronous parses: every response
 * was checked the slow, generic way, a large share of a page of 500 events. The same schema,
 * checked synchronously, with the same result and the same ZodError; a schema that turns out to
 * hold an asynchronous check still gets the asynchronous parse.
 */
export function synchronousFirst<T extends z.ZodType>(schema: T): T {
  const parseAsync = schema.parseAsync.bind(schema);
  return Object.assign(schema, {
    parseAsync: async (data: unknown, params?: Parameters<T['parseAsync']>[1]) => {
      try {
        return schema.parse(data, params);
      } catch (error) {
        if (error instanceof z.core.$ZodAsyncError) return parseAsync(data, params);
        throw error;
      }
    },
  });
}

export const errorEnvelope = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'Stable machine-readable error code.', example: 'not_found' }),
      message: z.string().meta({ description: 'A human sentence explaining the failure.' }),
      details: z
        .array(
          z.object({
            field: z.string().optional().meta({ description: 'The offending field, dotted for nested fields.' }),
            issue: z.string().meta({ description: 'Stable issue code, e.g. too_long, required, unknown_field.' }),
            message: z.string().optional(),
          }),
        )
        .optional(),
    }),
    request_id: z.string(),
  })
  .meta({ id: 'ErrorEnvelope', description: 'The one error envelope every failure uses.' });

export interface Respondable {
  requestId: string;
}

/** Wraps a payload in the success envelope. */
export function ok<T>(ctx: Respondable, data: T, cursor?: string | null) {
  return cursor === undefined ? { data, request_id: ctx.requestId } : { data, request_id: ctx.requestId, cursor };
}
