import { environmentSchema } from '@lop/contract';
import { z } from 'zod';

export const programSchema = z
  .object({
    program_id: z.uuid(),
    name: z.string(),
    status: z.enum(['active', 'inactive']),
    currency: z.string().meta({ description: 'ISO 4217 currency code.', example: 'USD' }),
    environment: environmentSchema,
  })
  .meta({ id: 'Program', description: 'A program granted to the calling API client.' });
export type Program = z.infer<typeof programSchema>;
