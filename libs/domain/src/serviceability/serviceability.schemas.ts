import { z } from 'zod';

/** Stable reason codes; a partner can branch on them. */
export const SERVICEABILITY_REASONS = [
  'program_not_available',
  'program_inactive',
  'item_not_available',
  'region_not_served',
  'collection_method_not_supported',
  'no_active_location_in_region',
] as const;

export const serviceabilitySchema = z
  .object({
    serviceable: z.boolean(),
    reasons: z.array(z.enum(SERVICEABILITY_REASONS)).meta({ description: 'Why the test is not serviceable; empty when it is.' }),
  })
  .meta({ id: 'Serviceability' });
export type Serviceability = z.infer<typeof serviceabilitySchema>;
