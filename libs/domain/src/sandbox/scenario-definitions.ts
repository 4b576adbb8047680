import type { StepArgs, StepOperation } from './step-operations';

/**
 * Sandbox scenarios (DESIGN §10), defined once, as data: each step names a laboratory operation
 * and its arguments. Everything a partner is told about a scenario — its step count, the events
 * it emits in order, the state it needs before each step — is derived from these steps by
 * walking them through the transition table (`planScenario` in scenarios.ts), never written twice.
 * Every scenario starts from a newly created order (lifecycle_detail `received`).
 */

export type ScenarioStep = { [K in StepOperation]: { name: string; description: string; operation: K; args: StepArgs[K] } }[StepOperation];

export interface ScenarioDefinition {
  scenario: string;
  description: string;
  steps: ScenarioStep[];
}

const step = <K extends StepOperation>(operation: K, name: string, description: string, args: StepArgs[K]): ScenarioStep =>
  ({ name, description, operation, args }) as ScenarioStep;

const none = {} as Record<string, never>;

/** The laboratory takes the order and tests a specimen, up to the point where a result can be recorded. */
const TO_TESTING: ScenarioStep[] = [
  step('transmit', 'transmit', 'The order is sent to the laboratory system.', none),
  step('acknowledge', 'acknowledge', 'The laboratory system acknowledges the order: lifecycle_detail becomes accepted and the requisition is issued.', { status: 'accepted' }),
  // Not "accept": the order is already `accepted` after acknowledge; this step makes it wait for a specimen.
  step('accept', 'await_collection', 'The laboratory opens the order for collection: lifecycle_detail becomes awaiting_collection.', none),
  step('collect', 'collect', 'A specimen is collected.', none),
  step('ship', 'ship', 'The specimen is on its way to the laboratory.', none),
  step('receive', 'receive', 'The laboratory receives the specimen.', none),
  step('accession', 'accession', 'The specimen is accessioned; testing starts.', none),
];

const record = (content: StepArgs['record_result']['content'], name: string, description: string, report = false) =>
  step('record_result', name, `${description} Recorded only: partners see the result as pending until it is released.`, { content, report });

const release = (as: StepArgs['release_result']['as'], name: string, description: string) => step('release_result', name, description, { as });

export const SCENARIO_DEFINITIONS: ScenarioDefinition[] = [
  {
    scenario: 'happy_path',
    description: 'The order goes from transmission through collection and testing to a released final result.',
    steps: [
      ...TO_TESTING,
      record('final', 'record_final_result', 'The laboratory records the final result.'),
      release('final', 'release_final_result', 'The final result is released.'),
    ],
  },
  {
    scenario: 'partial_then_final',
    description: 'Some analytes are released first as a partial result; the final result follows as the next version of the same lineage.',
    steps: [
      ...TO_TESTING,
      record('partial', 'record_partial_result', 'The laboratory records the first analytes.'),
      release('partial', 'release_partial_result', 'The partial result is released as version 1.'),
      record('final', 'record_final_result', 'The laboratory records every analyte.'),
      release('final', 'release_final_result', 'The final result is released as version 2; version 1 stays retrievable, superseded.'),
    ],
  },
  {
    scenario: 'corrected_result',
    description: 'A final result is released, then corrected: the correction supersedes it as a new version and the earlier version stays retrievable.',
    steps: [
      ...TO_TESTING,
      record('final', 'record_final_result', 'The laboratory records the final result.'),
      release('final', 'release_final_result', 'The final result is released as version 1.'),
      record('corrected', 'record_corrected_result', 'The laboratory records a corrected value.'),
      release('corrected', 'release_corrected_result', 'The correction is released as version 2 and supersedes version 1.'),
    ],
  },
  {
    scenario: 'critical_result',
    description: 'The final result holds a critical value: its release is also escalated with result.critical.',
    steps: [
      ...TO_TESTING,
      record('critical', 'record_critical_result', 'The laboratory records a result with a critical value.'),
      release('final', 'release_critical_result', 'The final result is released and flagged critical.'),
    ],
  },
  {
    scenario: 'specimen_rejected',
    description:
      'The laboratory rejects the received specimen: an exception asks the partner to act and the order needs a new collection. The replacement specimen is collected (the exception is resolved) and tested to a final result.',
    steps: [
      ...TO_TESTING.slice(0, 6),
      step('reject_specimen', 'reject_specimen', 'The specimen is rejected (hemolyzed); a specimen_rejected exception is opened.', { reason: 'Specimen hemolyzed; recollection required.' }),
      step('collect', 'recollect', 'A replacement specimen is collected; the rejection exception is resolved.', none),
      step('ship', 'ship_replacement', 'The replacement specimen is on its way.', none),
      step('receive', 'receive_replacement', 'The laboratory receives the replacement specimen.', none),
      step('accession', 'accession_replacement', 'The replacement specimen is accessioned.', none),
      record('final', 'record_final_result', 'The laboratory records the final result.'),
      release('final', 'release_final_result', 'The final result is released.'),
    ],
  },
  {
    scenario: 'cancelled_by_laboratory',
    description: 'The laboratory accepts the order, then cancels it before collection (the requisition is cancelled with it).',
    steps: [...TO_TESTING.slice(0, 3), step('cancel_by_laboratory', 'cancel_by_laboratory', 'The laboratory cancels the order.', none)],
  },
  {
    scenario: 'transmission_failure',
    description:
      'The order is sent but the laboratory system never acknowledges it: the transmission fails and the laboratory owns a retryable transmission_failed exception while the order stays pending (nothing for the partner to do; it may cancel). The laboratory retransmits, which resolves the exception, and the system accepts the order. Walk it with `steps: 2` to see the failed state first.',
    steps: [
      TO_TESTING[0],
      step('fail_transmission', 'fail_transmission', 'Transmission fails; a laboratory-owned, retryable transmission_failed exception is opened.', {
        reason: 'No acknowledgement from the laboratory interface engine.',
      }),
      step('transmit', 'retransmit', 'The laboratory transmits the order again; the transmission_failed exception is resolved.', none),
      TO_TESTING[1],
    ],
  },
  {
    scenario: 'report_available',
    description: 'Like happy_path, and the final result comes with a synthetic PDF report: GET …/report answers with a short-lived retrieval path.',
    steps: [
      ...TO_TESTING,
      record('final', 'record_final_result_with_report', 'The laboratory records the final result with its PDF report.', true),
      release('final', 'release_final_result', 'The final result and its report are released.'),
    ],
  },
];

/** The scenario names, in listing order: the request schema's enum (sandbox.schemas.ts) takes them from here, not from the plans. */
export const SCENARIO_NAMES = SCENARIO_DEFINITIONS.map((s) => s.scenario) as [string, ...string[]];
