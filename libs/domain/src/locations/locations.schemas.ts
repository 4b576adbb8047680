import { z } from 'zod';

export const locationSchema = z
  .object({
    location_id: z.uuid(),
    location_code: z.string(),
    name: z.string(),
    region: z.string(),
    city: z.string(),
    country: z.string().meta({ description: 'ISO 3166-1 alpha-2 country code.' }),
    timezone: z.string().meta({ description: 'IANA time zone.' }),
    collection_methods: z.array(z.string()),
    appointment_required: z.boolean(),
    walk_in_allowed: z.boolean(),
    service_status: z.literal('active'),
  })
  .meta({ id: 'Location', description: 'A serviceable collection location. Street address, telephone and internal detail are never returned.' });
export type Location = z.infer<typeof locationSchema>;
