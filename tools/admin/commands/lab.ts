import { readFile } from 'node:fs/promises';
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  describeInputIssues,
  EXCEPTION_CATEGORIES,
  laboratoryCaller,
  RELEASE_AS,
  resultRecordBody,
  type EmittedEvent,
  type Order,
  type OperatorException,
  type OperatorResult,
  type ReleaseAs,
} from '@lop/domain';
import { uuidArgument } from '../arguments';
import { operatorName } from '../operator';
import { withDatabase } from '../database';
import { fields, jsonOption, print, table, UsageError, type OutputOptions } from '../output';

type LaboratoryCaller = ReturnType<typeof laboratoryCaller>;

interface ZodLikeIssue {
  path: PropertyKey[];
  message: string;
}

function issuesOf(error: unknown): ZodLikeIssue[] | null {
  // tRPC wraps the input's ZodError as its cause.
  const cause = (error as { cause?: unknown } | undefined)?.cause ?? error;
  const issues = (cause as { issues?: unknown } | undefined)?.issues;
  return cause instanceof Error && cause.name === 'ZodError' && Array.isArray(issues) ? (issues as ZodLikeIssue[]) : null;
}


/**
 * Runs one laboratory operation through the internal router, against the same database as
 * `npm start`. Input the procedure refuses is a usage error; a refusal by the domain (e.g. an
 * illegal transition) is a failure with the domain's own sentence.
 */
async function operate<T>(work: (lab: LaboratoryCaller) => Promise<T>): Promise<T> {
  try {
    return await withDatabase((db) => work(laboratoryCaller({ db, operator: operatorName() })));
  } catch (error) {
    const issues = issuesOf(error);
    if (issues) throw new UsageError(describeInputIssues(issues));
    throw error;
  }
}

function timestampArgument(text: string): string {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text) || Number.isNaN(Date.parse(text))) {
    throw new InvalidArgumentError('expected an ISO 8601 date-time with an offset, such as 2025-01-31T09:30:00Z.');
  }
  return new Date(text).toISOString();
}

const orderArgument = (command: Command) => command.argument('<order_id>', 'order id (uuid)', uuidArgument);

const stateLine = (order: Order) => `Order ${order.order_id} is ${order.lifecycle} / ${order.lifecycle_detail} (next: ${order.next_action}).`;
const eventList = (events: EmittedEvent[]) => (events.length > 0 ? events.map((e) => e.type).join(', ') : 'none');

interface Outcome {
  order: Order;
  events: EmittedEvent[];
  specimen?: Order['specimens'][number];
  exception?: OperatorException | null;
  result?: OperatorResult;
}

/** The readable form every operation shares: the order's new state, what the operation touched, its events. */
function outcomeText(outcome: Outcome): string {
  const rows: [string, string][] = [];
  if (outcome.specimen) rows.push(['specimen', `${outcome.specimen.specimen_id} ${outcome.specimen.specimen_code} (${outcome.specimen.status})`]);
  if (outcome.exception) rows.push(['exception', `${outcome.exception.exception_id} ${outcome.exception.category} (${outcome.exception.status}, owner ${outcome.exception.owner_role})`]);
  if (outcome.result) rows.push(['result', resultLine(outcome.result)]);
  rows.push(['events', eventList(outcome.events)]);
  return [stateLine(outcome.order), fields(rows)].join('\n');
}

function resultLine(r: OperatorResult): string {
  const what = r.status === 'released' ? `version ${r.version}, ${r.state} (${r.version_type})` : 'recorded, not released';
  return `${r.result_id} ${what}${r.is_critical ? ', critical' : ''}`;
}

function report(options: OutputOptions) {
  return (outcome: Outcome) => print(outcome, options, outcomeText);
}

export function registerLab(program: Command): void {
  const lab = program
    .command('lab')
    .description('laboratory operations on orders (transmission, collection, specimens, results, exceptions); each change goes through the order transition table');

  orderArgument(lab.command('show').description('an order with every result version (released or not) and every exception, including operator notes'))
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions) => {
      const shown = await operate((l) => l.show({ order_id: orderId }));
      print(shown, options, (s) =>
        [
          stateLine(s.order),
          fields([
            ['requisition', `${s.order.requisition.state}${s.order.requisition.requisition_id ? ` ${s.order.requisition.requisition_id}` : ''}`],
            ['transmission', `${s.order.transmission.status}, ack ${s.order.transmission.ack_status}, attempts ${s.order.transmission.attempt_no}`],
            ['accession', s.order.accession.accession_number ?? 'none'],
          ]),
          'Specimens:',
          table(s.order.specimens, [['specimen_id', (x) => x.specimen_id], ['code', (x) => x.specimen_code], ['status', (x) => x.status], ['recollection_of', (x) => x.recollection_of ?? '']], '  none'),
          'Results:',
          table(s.results, [['result_id', (x) => x.result_id], ['status', (x) => x.status], ['version', (x) => String(x.version ?? '')], ['state', (x) => x.state ?? ''], ['critical', (x) => (x.is_critical ? 'yes' : '')]], '  none'),
          'Exceptions:',
          table(s.exceptions, [['exception_id', (x) => x.exception_id], ['category', (x) => x.category], ['status', (x) => x.status], ['owner', (x) => x.owner_role]], '  none'),
        ].join('\n'),
      );
    });

  orderArgument(lab.command('transmit').description('send the order to the laboratory system (one more attempt); after a failed transmission this is the retry, resolving its exception'))
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions) => report(options)(await operate((l) => l.transmit({ order_id: orderId }))));

  orderArgument(lab.command('acknowledge').description("record the laboratory system's acknowledgement; accepted issues the requisition, rejected fails the order (the partner closes it by cancelling)"))
    .addOption(new Option('--status <status>', 'the acknowledgement').choices(['accepted', 'rejected']).makeOptionMandatory())
    .option('--external-order-ref <ref>', "the laboratory system's reference for the order")
    .option('--requisition-id <id>', 'requisition id to issue (default: generated)')
    .option('--laboratory-reference <ref>', 'laboratory reference of the requisition (default: generated)')
    .option('--reason <text>', 'why it was rejected (operator notes, never shown to partners)')
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions & { status: 'accepted' | 'rejected'; externalOrderRef?: string; requisitionId?: string; laboratoryReference?: string; reason?: string }) =>
      report(options)(
        await operate((l) =>
          l.acknowledge({
            order_id: orderId,
            status: options.status,
            external_order_ref: options.externalOrderRef,
            requisition_id: options.requisitionId,
            laboratory_reference: options.laboratoryReference,
            reason: options.reason,
          }),
        ),
      ),
    );

  orderArgument(lab.command('fail-transmission').description('the transmission failed: a laboratory-owned, retryable transmission_failed exception; retry with `lab transmit`, or `lab cancel`'))
    .option('--reason <text>', 'what went wrong (operator notes, never shown to partners)')
    .option('--source-exception-type <type>', "the integration's own error type, when it gave one")
    .option('--adapter-key <key>', 'the integration adapter that failed')
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions & { reason?: string; sourceExceptionType?: string; adapterKey?: string }) =>
      report(options)(
        await operate((l) =>
          l.failTransmission({ order_id: orderId, reason: options.reason, source_exception_type: options.sourceExceptionType, source_adapter_key: options.adapterKey }),
        ),
      ),
    );

  orderArgument(lab.command('accept').description('accept the order for collection (awaiting_collection); issues the requisition if not yet issued'))
    .option('--requisition-id <id>', 'requisition id to issue (default: generated)')
    .option('--laboratory-reference <ref>', 'laboratory reference of the requisition (default: generated)')
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions & { requisitionId?: string; laboratoryReference?: string }) =>
      report(options)(await operate((l) => l.accept({ order_id: orderId, requisition_id: options.requisitionId, laboratory_reference: options.laboratoryReference }))),
    );

  orderArgument(lab.command('collect').description('a specimen was collected (after a rejection: the replacement specimen)'))
    .option('--specimen-code <code>', 'specimen code on the tube (default: generated)')
    .option('--specimen-type <type>', "specimen type (default: the ordered test's)")
    .option('--collected-at <date-time>', 'when it was collected, also the occurred_at of its events (default: now)', timestampArgument)
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions & { specimenCode?: string; specimenType?: string; collectedAt?: string }) =>
      report(options)(
        await operate((l) => l.collect({ order_id: orderId, specimen_code: options.specimenCode, specimen_type: options.specimenType, collected_at: options.collectedAt })),
      ),
    );

  orderArgument(lab.command('ship').description('the collected specimen is in transit to the laboratory'))
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions) => report(options)(await operate((l) => l.ship({ order_id: orderId }))));

  orderArgument(lab.command('receive').description('the laboratory received the specimen'))
    .option('--received-at <date-time>', 'when it arrived, also the occurred_at of its events (default: now)', timestampArgument)
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions & { receivedAt?: string }) =>
      report(options)(await operate((l) => l.receive({ order_id: orderId, received_at: options.receivedAt }))),
    );

  orderArgument(lab.command('accession').description('accession the received specimen; testing starts'))
    .option('--accession-number <number>', 'accession number (default: generated)')
    .option('--source-system <name>', 'system that assigned it (default: laboratory_information_system)')
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions & { accessionNumber?: string; sourceSystem?: string }) =>
      report(options)(await operate((l) => l.accession({ order_id: orderId, accession_number: options.accessionNumber, source_system: options.sourceSystem }))),
    );

  orderArgument(lab.command('reject-specimen').description('reject the current specimen: the partner gets a specimen_rejected exception and the order needs recollection'))
    .requiredOption('--reason <text>', 'rejection reason, shown on the specimen (e.g. hemolyzed)')
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions & { reason: string }) =>
      report(options)(await operate((l) => l.rejectSpecimen({ order_id: orderId, reason: options.reason }))),
    );

  orderArgument(lab.command('record-result').description('record a result version WITHOUT releasing it; partners see only that a result is pending'))
    .requiredOption('--file <path>', 'JSON file: source_result_id, performing_laboratory_system, observations[], optional performing_laboratory, is_critical, report {content_type, content_base64}')
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions & { file: string }) => {
      const body = await readResultFile(options.file);
      report(options)(await operate((l) => l.recordResult({ ...body, order_id: orderId })));
    });

  lab
    .command('release')
    .description('release a recorded version as the next version of the lineage; it supersedes the previous released version')
    .argument('<result_id>', 'result id (uuid), as shown by record-result', uuidArgument)
    .addOption(new Option('--as <kind>', 'what the version is').choices([...RELEASE_AS]).makeOptionMandatory())
    .option('--critical', 'flag the version critical (also emits result.critical)')
    .addOption(jsonOption())
    .action(async (resultId: string, options: OutputOptions & { as: ReleaseAs; critical?: boolean }) =>
      report(options)(await operate((l) => l.releaseResult({ result_id: resultId, as: options.as, critical: options.critical }))),
    );

  lab
    .command('flag-critical')
    .description('flag a result version critical; a released one emits result.critical at once')
    .argument('<result_id>', 'result id (uuid)', uuidArgument)
    .addOption(jsonOption())
    .action(async (resultId: string, options: OutputOptions) => report(options)(await operate((l) => l.flagCritical({ result_id: resultId }))));

  orderArgument(lab.command('cancel').description('cancel the order on behalf of the laboratory (order.cancelled)'))
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions) => report(options)(await operate((l) => l.cancel({ order_id: orderId }))));

  registerExceptions(lab);
}

function registerExceptions(lab: Command): void {
  const exceptions = lab.command('exceptions').description('canonical exceptions of an order (the model partners read through GET …/exceptions)');
  const categories = Object.keys(EXCEPTION_CATEGORIES);

  orderArgument(exceptions.command('list').description('every exception of an order, newest first, with operator notes and resolution text'))
    .addOption(jsonOption())
    .action(async (orderId: string, options: OutputOptions) => {
      const listed = await operate((l) => l.exceptions.list({ order_id: orderId }));
      print(listed, options, (r) =>
        table(
          r.exceptions,
          [
            ['exception_id', (x) => x.exception_id],
            ['category', (x) => x.category],
            ['status', (x) => x.status],
            ['owner', (x) => x.owner_role],
            ['opened_at', (x) => x.opened_at],
            ['notes', (x) => x.operator_notes ?? ''],
          ],
          'This order has no exceptions.',
        ),
      );
    });

  orderArgument(exceptions.command('open').description('open an exception; one the partner owns emits integration.action_required'))
    .addOption(new Option('--category <category>', 'exception category; it sets the defaults below').choices(categories).makeOptionMandatory())
    .addOption(new Option('--severity <severity>', 'default: from the category').choices(['info', 'warning', 'error', 'critical']))
    .addOption(new Option('--owner <role>', 'who must act (default: from the category)').choices(['partner', 'laboratory']))
    .addOption(new Option('--entity-type <type>', 'default: from the category').choices(['order', 'specimen', 'result']))
    .option('--entity-id <id>', 'the specimen or result concerned (uuid)', uuidArgument)
    .option('--retryable', 'the failed step can be retried')
    .option('--no-retryable', 'the failed step cannot be retried')
    .option('--notes <text>', 'operator notes (never shown to partners)')
    .option('--source-exception-type <type>', "the laboratory system's own exception type, when it gave one")
    .option('--adapter-key <key>', 'the integration adapter that raised it')
    .addOption(jsonOption())
    .action(
      async (
        orderId: string,
        options: OutputOptions & {
          category: keyof typeof EXCEPTION_CATEGORIES;
          severity?: 'info' | 'warning' | 'error' | 'critical';
          owner?: 'partner' | 'laboratory';
          entityType?: 'order' | 'specimen' | 'result';
          entityId?: string;
          retryable?: boolean;
          notes?: string;
          sourceExceptionType?: string;
          adapterKey?: string;
        },
      ) =>
        report(options)(
          await operate((l) =>
            l.exceptions.open({
              order_id: orderId,
              category: options.category,
              severity: options.severity,
              owner_role: options.owner,
              entity_type: options.entityType,
              entity_id: options.entityId,
              retryable: options.retryable,
              operator_notes: options.notes,
              source_exception_type: options.sourceExceptionType,
              source_adapter_key: options.adapterKey,
            }),
          ),
        ),
    );

  exceptions
    .command('resolve')
    .description('resolve an open exception; the resolution text stays with operators')
    .argument('<exception_id>', 'exception id (uuid)', uuidArgument)
    .requiredOption('--resolution <text>', 'how it was resolved (never shown to partners)')
    .option('--notes <text>', 'operator notes (replace the existing ones)')
    .addOption(jsonOption())
    .action(async (exceptionId: string, options: OutputOptions & { resolution: string; notes?: string }) =>
      report(options)(await operate((l) => l.exceptions.resolve({ exception_id: exceptionId, resolution_text: options.resolution, operator_notes: options.notes }))),
    );
}

/** Reads and checks the result file before anything touches the database. */
async function readResultFile(path: string) {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read --file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UsageError(`--file ${path} is not valid JSON`);
  }
  const parsed = resultRecordBody.safeParse(json);
  if (!parsed.success) throw new UsageError(`--file ${path}: ${describeInputIssues(parsed.error.issues)}`);
  return parsed.data;
}
