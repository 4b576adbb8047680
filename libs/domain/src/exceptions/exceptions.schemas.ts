import { z } from 'zod';
import { timestampSchema } from '../common-schemas';

/**
 * The one canonical exception model (spec Endpoint rule 6): laboratory operations open and
 * resolve these, partners read them. Each enumeration is defined here once.
 */
export const exceptionSeveritySchema = z.enum(['info', 'warning', 'error', 'critical']).meta({ id: 'ExceptionSeverity' });
export const exceptionStatusSchema = z.enum(['open', 'resolved']).meta({ id: 'ExceptionStatus' });
export const exceptionOwnerRoleSchema = z
  .enum(['partner', 'laboratory'])
  .meta({ id: 'ExceptionOwnerRole', description: 'Who must act: `partner` exceptions make `action_required` true and emit integration.action_required.' });
export const exceptionEntityTypeSchema = z.enum(['order', 'specimen', 'result']).meta({ id: 'ExceptionEntityType' });

export type ExceptionSeverity = z.infer<typeof exceptionSeveritySchema>;
export type ExceptionOwnerRole = z.infer<typeof exceptionOwnerRoleSchema>;
export type ExceptionEntityType = z.infer<typeof exceptionEntityTypeSchema>;

/**
 * Each category with the defaults an exception of it is opened with. `owner_role` says who can
 * move it: a transmission failure is the laboratory's to retry (`lab transmit` again), so it is
 * laboratory-owned — no partner endpoint could act on it.
 */
export const EXCEPTION_CATEGORIES = {
  transmission_failed: { severity: 'error', owner_role: 'laboratory', entity_type: 'order', retryable: true, domain: 'transmission' },
  order_rejected: { severity: 'error', owner_role: 'partner', entity_type: 'order', retryable: false, domain: 'transmission' },
  order_information_required: { severity: 'warning', owner_role: 'partner', entity_type: 'order', retryable: false, domain: 'order' },
  specimen_rejected: { severity: 'error', owner_role: 'partner', entity_type: 'specimen', retryable: true, domain: 'specimen' },
  collection_delayed: { severity: 'info', owner_role: 'laboratory', entity_type: 'specimen', retryable: false, domain: 'specimen' },
  result_delayed: { severity: 'info', owner_role: 'laboratory', entity_type: 'result', retryable: false, domain: 'result' },
} as const satisfies Record<string, { severity: ExceptionSeverity; owner_role: ExceptionOwnerRole; entity_type: ExceptionEntityType; retryable: boolean; domain: string }>;

export type ExceptionCategory = keyof typeof EXCEPTION_CATEGORIES;
export const exceptionCategorySchema = z
  .enum(Object.keys(EXCEPTION_CATEGORIES) as [ExceptionCategory, ...ExceptionCategory[]])
  .meta({ id: 'ExceptionCategory' });

/** What partners see: structural fields only; operator notes, evidence and resolution text never appear. */
export const orderExceptionSchema = z
  .object({
    exception_id: z.uuid(),
    category: exceptionCategorySchema,
    severity: exceptionSeveritySchema,
    status: exceptionStatusSchema,
    owner_role: exceptionOwnerRoleSchema,
    entity_type: exceptionEntityTypeSchema,
    retryable: z.boolean(),
    opened_at: timestampSchema,
    resolved_at: timestampSchema.nullable(),
    source: z
      .object({
        exception_type: z.string().nullable().meta({ description: "The laboratory's own exception type, when it supplied one; never guessed." }),
        domain: z.string().nullable(),
        adapter_key: z.string().nullable(),
      })
      .meta({ description: 'Where the exception came from.' }),
  })
  .meta({ id: 'OrderException' });
export type OrderException = z.infer<typeof orderExceptionSchema>;

export const orderExceptionsSchema = z
  .object({
    order_id: z.uuid(),
    count: z.number().int(),
    action_required: z.boolean().meta({ description: 'True while an open exception is owned by the partner.' }),
    exceptions: z.array(orderExceptionSchema).meta({ description: 'Newest first.' }),
  })
  .meta({ id: 'OrderExceptions' });
export type OrderExceptions = z.infer<typeof orderExceptionsSchema>;
