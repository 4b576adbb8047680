import { z } from 'zod';
import type { NextAction } from '@lop/contract';
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

/** What went wrong; every category has one row in EXCEPTION_CATEGORIES below. */
export const exceptionCategorySchema = z
  .enum(['transmission_failed', 'order_rejected', 'order_information_required', 'specimen_rejected', 'collection_delayed', 'result_delayed'])
  .meta({ id: 'ExceptionCategory' });
export type ExceptionCategory = z.infer<typeof exceptionCategorySchema>;

/** Everything a category decides about its exceptions; one row per category in EXCEPTION_CATEGORIES. */
export interface ExceptionCategoryPolicy {
  /** The defaults an exception of the category is opened with (an operator may override the first four). */
  severity: ExceptionSeverity;
  owner_role: ExceptionOwnerRole;
  entity_type: ExceptionEntityType;
  retryable: boolean;
  /** `source.domain`: the subsystem it comes from. */
  domain: 'transmission' | 'order' | 'specimen' | 'result';
  /**
   * The order's next_action while the partner owns an open exception of the category (the newest
   * one decides). A laboratory-owned one leaves next_action to the order's state; an operator who
   * hands one to the partner makes it ask this.
   */
  partner_next_action: NextAction;
  /** When it is opened, for the partner docs (docs/results-reports-exceptions.md is generated from it). */
  opened_when: string;
}

/**
 * The exception policy: each category's defaults, the action it asks of the partner and when it
 * is opened. The code reads them from here and the docs table is generated from it, so a
 * category without a row does not compile. `owner_role` says who can move it: a transmission
 * failure is the laboratory's to retry (`lab transmit` again), so it is laboratory-owned — no
 * partner endpoint could act on it.
 */
export const EXCEPTION_CATEGORIES = {
  transmission_failed: {
    severity: 'error',
    owner_role: 'laboratory',
    entity_type: 'order',
    retryable: true,
    domain: 'transmission',
    partner_next_action: 'resolve_exception',
    opened_when: 'the transmission to the laboratory system fails; the laboratory retries it',
  },
  order_rejected: {
    severity: 'error',
    owner_role: 'partner',
    entity_type: 'order',
    retryable: false,
    domain: 'transmission',
    partner_next_action: 'resolve_exception',
    opened_when: 'the laboratory system rejects the order on acknowledgement',
  },
  order_information_required: {
    severity: 'warning',
    owner_role: 'partner',
    entity_type: 'order',
    retryable: false,
    domain: 'order',
    partner_next_action: 'provide_information',
    opened_when: 'an operator needs information from the partner',
  },
  specimen_rejected: {
    severity: 'error',
    owner_role: 'partner',
    entity_type: 'specimen',
    retryable: true,
    domain: 'specimen',
    partner_next_action: 'recollect_specimen',
    opened_when: 'the laboratory rejects the specimen (recollection needed)',
  },
  collection_delayed: {
    severity: 'info',
    owner_role: 'laboratory',
    entity_type: 'specimen',
    retryable: false,
    domain: 'specimen',
    partner_next_action: 'resolve_exception',
    opened_when: 'an operator notes a collection delay',
  },
  result_delayed: {
    severity: 'info',
    owner_role: 'laboratory',
    entity_type: 'result',
    retryable: false,
    domain: 'result',
    partner_next_action: 'resolve_exception',
    opened_when: 'an operator notes a result delay',
  },
} as const satisfies Record<ExceptionCategory, ExceptionCategoryPolicy>;

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
