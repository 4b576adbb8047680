import { z } from 'zod';

export const subjectLinkSchema = z
  .object({ external_subject_id: z.string(), linked: z.boolean() })
  .meta({ id: 'SubjectLink', description: "The partner's opaque subject reference, linked for ordering." });
export type SubjectLink = z.infer<typeof subjectLinkSchema>;
