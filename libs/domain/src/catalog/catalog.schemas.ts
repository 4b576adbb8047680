import { z } from 'zod';

export const catalogItemSchema = z
  .object({
    item_id: z.uuid(),
    lab_orderable_id: z.uuid(),
    lab_test_code: z.string(),
    code: z.string(),
    description: z.string(),
    external_code: z.string(),
    name: z.string(),
    kind: z.string().meta({ description: 'test or panel', example: 'panel' }),
    performing_laboratory: z.string(),
    specimen_type: z.string(),
    container: z.string(),
    min_volume_ml: z.number(),
  })
  .meta({ id: 'CatalogItem', description: 'An orderable test of a program.' });
export type CatalogItem = z.infer<typeof catalogItemSchema>;
