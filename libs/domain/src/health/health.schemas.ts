import { environmentSchema } from '@lop/contract';
import { z } from 'zod';
import { timestampSchema } from '../common-schemas';
import { SERVICE_VERSION } from '../versions';

export const healthSchema = z
  .object({
    status: z.literal('ok'),
    version: z.string().meta({
      example: SERVICE_VERSION,
      description: 'The build (release) of the service that answered, e.g. `0.1.0`. Not the API version (`v1`) nor the event payload version (`1`); it changes with every release and says nothing about compatibility.',
    }),
    environment: environmentSchema,
    server_time: timestampSchema,
  })
  .meta({ id: 'Health' });
