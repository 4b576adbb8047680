import { z } from 'zod';

/** The success envelope every partner response uses (DESIGN §3). */
export function envelopeOf<T extends z.ZodType>(data: T) {
  return z.object({
    data,
    request_id: z.string().meta({ description: 'Identifier of this request; also in the X-Request-Id header.', example: 'req_4f9c1d2e8a7b6c5d4e3f2a1b' }),
    cursor: z.string().nullable().optional().meta({ description: 'Cursor to continue a list from; null when there is nothing more.' }),
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
