import { z } from 'zod';
import {
  ackStatusSchema,
  environmentSchema,
  eventTypeSchema,
  LIFECYCLE_DETAILS,
  lifecycleDetailSchema,
  lifecycleSchema,
  nextActionSchema,
  requisitionStateSchema,
  specimenStatusSchema,
  transmissionStatusSchema,
  type EventType,
  type LifecycleDetail,
} from '@lop/contract';
import {
  EXCEPTION_CATEGORIES,
  exceptionCategorySchema,
  exceptionEntityTypeSchema,
  exceptionOwnerRoleSchema,
  exceptionSeveritySchema,
  exceptionStatusSchema,
  type ExceptionCategory,
} from '../exceptions/exceptions.schemas';
import { partnerCanCancel } from '../orders/lifecycle';
import { requestLogSourceSchema, statusClassSchema } from '../request-log/request-log.schemas';
import { authorityStateSchema } from '../requirements/requirements.schemas';
import { fhirResultStatusSchema } from '../results/fhir.schemas';
import { pendingReasonSchema, reportStateSchema, resultStateSchema, resultStatusSchema, resultVersionTypeSchema } from '../results/results.schemas';
import { fixtureContractSchema } from '../sandbox/sandbox.schemas';

/**
 * What each value of an enumeration means, written next to the documents rather than into the
 * schemas, so the schema files stay about validation. Read by both document builders (OpenAPI:
 * `description` + `x-enumDescriptions`; AsyncAPI) and by the partner docs; it sits in neither
 * builder's folder, so they import it rather than each other. Where a value's meaning is already
 * a table in code (lifecycle, exception categories) it is derived from that table.
 */
export interface EnumDocumentation<Value extends string = string> {
  description: string;
  values: Readonly<Record<Value, string>>;
}

/**
 * Binds an enumeration's documentation to its Zod schema, so the values to describe are the
 * schema's own: a value left undescribed, or a description of a value the schema lacks, does not
 * compile. An empty description compiles; `checkEnumDocumentation` refuses it when the documents
 * are built.
 */
export function documentEnum<Schema extends z.ZodEnum>(_schema: Schema, documentation: EnumDocumentation<Extract<z.output<Schema>, string>>): EnumDocumentation<Extract<z.output<Schema>, string>> {
  return documentation;
}

/** `text` empty or only whitespace: a table cell that says nothing. */
const blank = (text: unknown) => typeof text !== 'string' || text.trim() === '';

/**
 * Refuses documentation that would publish an empty description (the enumeration's or a value's),
 * or that describes other values than the published schema has; the message names the enumeration
 * and the value. Run by the OpenAPI builder, so `npm run openapi:check` and `npm run docs` fail on it.
 */
export function checkEnumDocumentation(name: string, enumValues: readonly unknown[], documentation: EnumDocumentation): void {
  const where = 'libs/domain/src/documents/enum-descriptions.ts';
  if (blank(documentation.description)) throw new Error(`Enumeration ${name} has an empty description (${where}).`);
  const described: Record<string, string | undefined> = documentation.values;
  for (const value of enumValues) {
    if (!Object.hasOwn(described, String(value))) throw new Error(`Enumeration ${name}: value \`${String(value)}\` has no description (${where}).`);
    if (blank(described[String(value)])) throw new Error(`Enumeration ${name}: value \`${String(value)}\` has an empty description (${where}).`);
  }
  const unknown = Object.keys(described).filter((value) => !enumValues.map(String).includes(value));
  if (unknown.length > 0) throw new Error(`Enumeration ${name} describes values it does not have: ${unknown.map((v) => `\`${v}\``).join(', ')} (${where}).`);
}

/** One entry per key of a table in code, so a row added to the table is described too. */
const describeRows = <Key extends string, Row>(table: Record<Key, Row>, describe: (key: Key, row: Row) => string) =>
  Object.fromEntries(Object.entries<Row>(table).map(([key, row]) => [key, describe(key as Key, row)])) as Record<Key, string>;

const lifecycleDetailValues = describeRows(
  LIFECYCLE_DETAILS as Record<LifecycleDetail, (typeof LIFECYCLE_DETAILS)[LifecycleDetail]>,
  (detail, row) => `lifecycle \`${row.lifecycle}\`, next_action \`${row.next_action}\`; ${partnerCanCancel(detail) ? 'the partner can cancel' : 'cancel answers 409'}.`,
);

const exceptionCategoryValues = describeRows(
  EXCEPTION_CATEGORIES as Record<ExceptionCategory, (typeof EXCEPTION_CATEGORIES)[ExceptionCategory]>,
  (_category, row) =>
    `${row.severity} about the ${row.entity_type}; ${row.owner_role === 'partner' ? 'the partner must act' : 'the laboratory acts'}${'retryable' in row && row.retryable ? '; retryable' : ''}.`,
);

const EVENT_TYPE_MEANINGS: Record<EventType, string> = {
  'order.created': 'An order was created.',
  'order.updated':
    'The lifecycle or next_action of an order changed, or an exception the partner had to act on was resolved (then `action_required_code` names what is left, or `none`). A change of lifecycle_detail alone emits nothing, and a change an integration.action_required already announced is not repeated.',
  'order.cancelled': 'An order was cancelled, by the partner or by the laboratory; its open exceptions are resolved with it.',
  'specimen.updated': 'A specimen was collected, shipped, received, accessioned or rejected.',
  'result.partial': 'A partial result version was released.',
  'result.final': 'A final result version was released; it belongs to the same lineage as earlier partial versions.',
  'result.corrected': 'A corrected or amended version superseded an earlier one, which stays retrievable.',
  'result.critical': 'A released version is flagged critical: an escalation signal only; read the result from the API.',
  'integration.action_required':
    'An exception the partner must act on was opened; its `lifecycle` and `next_action` are the order\'s new ones, `next_action` naming the partner\'s action (docs/lifecycle.md). No separate order.updated is sent for that change, even when the order\'s state changed with it (a rejected specimen, an order the laboratory rejected).',
};

export const ENUM_DOCUMENTATION = {
  StatusClass: documentEnum(statusClassSchema, {
    description: 'A class of HTTP status, to filter the sandbox request log by.',
    values: { '2xx': 'Succeeded.', '3xx': 'Redirected (the API answers none today).', '4xx': 'Refused: the request must change (the error envelope says how).', '5xx': 'Failed on our side; retry later.' },
  }),
  RequestLogSource: documentEnum(requestLogSourceSchema, {
    description: 'Where a logged sandbox request came from, to filter the request log by.',
    values: {
      rest: 'A REST request: curl, your integration, any client but the two below.',
      lop: 'A REST request of the `lop` CLI (its User-Agent is `lop/<version>`), e.g. an idle `lop listen` polling the event stream.',
      console: 'The sandbox console\'s action that stands for this REST route.',
    },
  }),
  Environment: documentEnum(environmentSchema, { description: 'The environment a key, program or event belongs to.', values: { sandbox: 'Synthetic orders for integration work.', production: 'Real orders.' } }),
  AuthorityState: documentEnum(authorityStateSchema, {
    description: 'Whether the laboratory configured a requirements facet.',
    values: { configured: 'The facet is configured; its required fields apply.', not_configured: 'Not configured by the laboratory: the facet requires nothing.' },
  }),
  Lifecycle: documentEnum(lifecycleSchema, {
    description: 'The coarse state of an order; `lifecycle_detail` gives the precise one.',
    values: {
      pending: 'Received, not yet accepted by the laboratory (including while the laboratory retries a failed transmission).',
      active: 'Accepted; collection or testing is under way.',
      resulted: 'Partial results are released.',
      completed: 'Final (or corrected) results are released.',
      cancelled: 'Cancelled by the partner or the laboratory.',
      failed: 'Rejected by the laboratory; the order_rejected exception explains why. Cancel the order to close it.',
    },
  }),
  NextAction: documentEnum(nextActionSchema, {
    description: 'What should happen next, and by whom.',
    values: {
      wait_for_laboratory: 'Nothing to do: the laboratory has not accepted the order yet.',
      collect_specimen: 'The specimen is to be collected.',
      wait_for_results: 'Nothing to do: the specimen is on its way or in testing.',
      recollect_specimen: 'A specimen was rejected; a new one must be collected.',
      read_results: 'Released results are available.',
      none: 'The order is closed.',
      resolve_exception: 'Read the order exceptions and act on them; a rejected order is closed by cancelling it.',
      provide_information: 'The laboratory needs information about the order (an open order_information_required exception): read the order exceptions and supply it.',
    },
  }),
  LifecycleDetail: documentEnum(lifecycleDetailSchema, { description: 'The precise state of an order. Each value fixes `lifecycle` and `next_action`.', values: lifecycleDetailValues }),
  RequisitionState: documentEnum(requisitionStateSchema, {
    description: 'State of the laboratory requisition for the order.',
    values: { not_issued: 'No requisition yet.', issued: 'The laboratory issued a requisition.', cancelled: 'The requisition was cancelled with the order.' },
  }),
  SpecimenStatus: documentEnum(specimenStatusSchema, {
    description: 'Where a specimen is.',
    values: {
      collected: 'Collected from the subject.',
      in_transit: 'On its way to the laboratory.',
      received: 'Received by the laboratory.',
      accessioned: 'Accessioned and in testing.',
      rejected: 'Rejected; see `rejection_reason` and the order exceptions.',
    },
  }),
  TransmissionStatus: documentEnum(transmissionStatusSchema, {
    description: 'Transmission of the order to the laboratory system.',
    values: { not_sent: 'Not transmitted yet.', sent: 'Transmitted.', failed: 'Transmission failed; an exception is open.' },
  }),
  AckStatus: documentEnum(ackStatusSchema, {
    description: "The laboratory system's acknowledgement of the transmitted order.",
    values: { not_requested: 'No acknowledgement expected yet.', pending: 'Waiting for the acknowledgement.', accepted: 'Accepted.', rejected: 'Rejected; the order fails.' },
  }),
  ExceptionCategory: documentEnum(exceptionCategorySchema, { description: 'What went wrong. The same canonical model the laboratory operations use.', values: exceptionCategoryValues }),
  ExceptionSeverity: documentEnum(exceptionSeveritySchema, {
    description: 'How serious an exception is.',
    values: { info: 'For information.', warning: 'Needs attention.', error: 'Blocks the order until resolved.', critical: 'Urgent.' },
  }),
  ExceptionStatus: documentEnum(exceptionStatusSchema, { description: 'Whether an exception is still open.', values: { open: 'Still open.', resolved: 'Resolved; kept for the record.' } }),
  ExceptionOwnerRole: documentEnum(exceptionOwnerRoleSchema, {
    description: 'Who must act: `partner` exceptions make `action_required` true and emit integration.action_required.',
    values: { partner: 'The partner must act.', laboratory: 'The laboratory acts; nothing for the partner to do.' },
  }),
  ExceptionEntityType: documentEnum(exceptionEntityTypeSchema, { description: 'What an exception is about.', values: { order: 'The order.', specimen: 'A specimen.', result: 'A result.' } }),
  ResultVersionType: documentEnum(resultVersionTypeSchema, {
    description: 'How a result version relates to the earlier ones.',
    values: { initial: 'The first version.', update: 'A later version of the same lineage (e.g. final after partial).', correction: 'Corrects an earlier version.', amendment: 'Amends an earlier version.' },
  }),
  ResultState: documentEnum(resultStateSchema, {
    description: 'Completeness of a result version.',
    values: { partial: 'Some observations are still to come.', final: 'Complete.', corrected: 'Complete, correcting an earlier version.', amended: 'Complete, amending an earlier version.' },
  }),
  ResultStatus: documentEnum(resultStatusSchema, { description: 'Only released versions are ever returned.', values: { released: 'Released by the laboratory.' } }),
  ResultPendingReason: documentEnum(pendingReasonSchema, {
    description: 'Why a result is pending.',
    values: {
      not_yet_released: 'No version of the result has been released yet.',
      update_not_yet_released: 'A newer version exists but is not released; the released versions in the answer stay authoritative until it is.',
    },
  }),
  ReportState: documentEnum(reportStateSchema, {
    description: 'Only `available` is answered with 200; without a laboratory document the endpoint refuses with 404 `report_not_modeled`.',
    values: { available: 'The laboratory document of the result can be retrieved.' },
  }),
  FixtureContract: documentEnum(fixtureContractSchema, {
    description: 'Which requirements an order fixture is built to meet.',
    values: {
      minimal: 'Only the fields every order needs.',
      provider: 'An ordering provider is required.',
      patient: 'Patient fields are required.',
      aoe: 'Ask-at-order-entry questions must be answered.',
    },
  }),
  FhirResultStatus: documentEnum(fhirResultStatusSchema, {
    description: 'The FHIR view’s `DiagnosticReport.status` and `Observation.status`: the released version’s `state`, in FHIR R4 terms.',
    values: {
      preliminary: 'State `partial`: some observations are still to come.',
      final: 'State `final`.',
      corrected: 'State `corrected`: corrects an earlier version, which names this one in its superseded-by extension.',
      amended: 'State `amended`: amends an earlier version, which names this one in its superseded-by extension.',
    },
  }),
  EventType: documentEnum(eventTypeSchema, { description: 'The nine event types; no others are emitted.', values: EVENT_TYPE_MEANINGS }),
} satisfies Record<string, EnumDocumentation>;

/** The documentation of the enumeration a published document names `name`, when there is one. */
export function enumDocumentation(name: string): EnumDocumentation | undefined {
  return Object.hasOwn(ENUM_DOCUMENTATION, name) ? (ENUM_DOCUMENTATION as Record<string, EnumDocumentation>)[name] : undefined;
}
