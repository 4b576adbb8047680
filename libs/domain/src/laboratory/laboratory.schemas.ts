import { environmentSchema } from '@lop/contract';
import { z } from 'zod';

export const laboratoryProfileSchema = z
  .object({
    laboratory_id: z.uuid(),
    display_name: z.string(),
    legal_name: z.string(),
    operating_name: z.string(),
    environment: environmentSchema,
    certifications: z.object({
      state: z.literal('not_modeled').meta({ description: 'Certifications are self-declared, never verified.' }),
      identifiers: z.array(z.string()),
    }),
    jurisdictions: z.array(z.string()),
    service_geography: z.array(z.string()),
    collection_methods: z.array(z.string()),
    collection_modes: z.array(z.string()),
    specimen_categories: z.array(z.string()),
    coding_systems_supplied: z.array(z.string()),
  })
  .meta({ id: 'LaboratoryProfile', description: "The laboratory's self-declared capability profile." });
export type LaboratoryProfile = z.infer<typeof laboratoryProfileSchema>;
