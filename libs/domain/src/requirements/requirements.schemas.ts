import { environmentSchema } from '@lop/contract';
import { z } from 'zod';

export const authorityStateSchema = z.enum(['configured', 'not_configured']).meta({ id: 'AuthorityState', description: 'not_configured facets require nothing.' });

export const aoeQuestionSchema = z
  .object({
    question_key: z.string(),
    prompt: z.string(),
    answer_type: z.enum(['string', 'boolean', 'single_choice', 'date', 'number']),
    options: z.array(z.string()),
    required: z.boolean(),
    version: z.number().int(),
  })
  .meta({ id: 'AoeQuestion', description: 'An ask-at-order-entry question.' });

export const requirementsProfileSchema = z
  .object({
    program_id: z.uuid(),
    item_id: z.uuid().optional().meta({ description: 'Present when requested with item_id.' }),
    jurisdiction: z.string(),
    environment: environmentSchema,
    subject: z.object({
      mode: z.literal('opaque_reference'),
      required_patient_fields: z.array(z.string()),
      authority_state: authorityStateSchema,
    }),
    order: z.object({ required_fields: z.array(z.string()), authority_state: authorityStateSchema }),
    provider: z.object({
      requirement: z.enum(['not_required', 'required']),
      required_fields: z.array(z.string()),
      authority_state: authorityStateSchema,
      license_authority_state: z.literal('not_modeled'),
    }),
    aoe: z.object({ authority_state: authorityStateSchema, questions: z.array(aoeQuestionSchema) }),
    clinical: z.object({
      policy: z.string(),
      ordering_model: z.string(),
      clinical_review: z.string(),
      intake_required: z.boolean(),
      requirement_id: z.uuid().nullable(),
      requirement_state: z.string(),
    }),
    collection: z.object({ methods: z.array(z.string()), regions: z.array(z.string()) }),
    billing: z.object({
      mode_required: z.boolean(),
      authority_state: authorityStateSchema,
      // Create refuses a billing_mode outside this list, so the profile has to show it.
      accepted_modes: z.array(z.string()).meta({ description: 'The billing_mode values an order may carry; empty means any.' }),
    }),
  })
  .meta({ id: 'RequirementsProfile', description: 'What an order for this program (and item, and region) must carry.' });
export type RequirementsProfile = z.infer<typeof requirementsProfileSchema>;
export type AoeQuestion = z.infer<typeof aoeQuestionSchema>;
