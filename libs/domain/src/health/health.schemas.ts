import { z } from 'zod';
import { environmentSchema } from '../auth/scopes';
import { timestampSchema } from '../common-schemas';

/** The service's release version, reported by health. */
export const SERVICE_VERSION = '0.1.0';

export const healthSchema = z
  .object({
    status: z.literal('ok'),
    version: z.string().meta({ example: SERVICE_VERSION }),
    environment: environmentSchema,
    server_time: timestampSchema,
  })
  .meta({ id: 'Health' });
