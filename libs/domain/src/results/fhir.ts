import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { and, asc, eq, lt } from 'drizzle-orm';
import { catalogItems, resultVersions, specimens, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import type { OrderRow, SpecimenRow } from '../orders/order-resource';
import { findReleasedResult, type ResultRow } from './results';
import type { ResultState } from './results.schemas';
import { fhirDecimal, type FhirBundle, type FhirCodeableConcept, type FhirDiagnosticReport, type FhirExtension, type FhirIdentifier, type FhirObservation, type FhirReference, type FhirSpecimen } from './fhir.schemas';

/**
 * The FHIR R4 view of one released result version (docs/fhir.md is the field-by-field mapping).
 * The rules of every other view hold: values go out as supplied (a plain decimal as a
 * `valueQuantity` whose JSON digits are the supplied ones, anything else `valueString`), codes
 * stay in the laboratory's own code system (no LOINC is ever derived), lineage becomes status and
 * replaces/superseded-by links, and the subject is the partner's opaque identifier only — nothing
 * personal is read here at all.
 */

type Reader = Pick<Database, 'select'>;

/**
 * Names, not addresses: stable URNs for this service's identifiers and for each laboratory's own
 * code systems (keyed by the laboratory's id, so two laboratories' "K" never mean the same).
 */
export const FHIR_SYSTEMS = {
  resultId: 'urn:lop:result-id',
  orderId: 'urn:lop:order-id',
  externalSubjectId: 'urn:lop:external-subject-id',
  resultVersion: (orderId: string) => `urn:lop:order:${orderId}:result-version`,
  /** The report of an order, the same across its versions: what a FHIR store updates in place. */
  orderReport: 'urn:lop:order-report',
  /** An analyte of an order, the same across its versions (analyteKeys). */
  orderObservation: (orderId: string) => `urn:lop:order:${orderId}:observation`,
  observationCode: (laboratoryId: string) => `urn:lop:laboratory:${laboratoryId}:observation-code`,
  testCode: (laboratoryId: string) => `urn:lop:laboratory:${laboratoryId}:test-code`,
  flag: (laboratoryId: string) => `urn:lop:laboratory:${laboratoryId}:flag`,
  sourceResultId: (laboratoryId: string) => `urn:lop:laboratory:${laboratoryId}:source-result-id`,
  specimenCode: (laboratoryId: string) => `urn:lop:laboratory:${laboratoryId}:specimen-code`,
  accessionNumber: (laboratoryId: string) => `urn:lop:laboratory:${laboratoryId}:accession-number`,
} as const;

export const FHIR_EXTENSIONS = {
  /** R4 core extension: this report replaces the referenced one. */
  replaces: 'http://hl7.org/fhir/StructureDefinition/diagnosticReport-replaces',
  supersededBy: 'urn:lop:fhir:extension:superseded-by',
  critical: 'urn:lop:fhir:extension:critical',
  suppliedField: 'urn:lop:fhir:extension:supplied-field',
} as const;

const V3_INTERPRETATION = 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation';
const DATA_ABSENT_REASON = 'http://terminology.hl7.org/CodeSystem/data-absent-reason';
const DATA_ABSENT_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/data-absent-reason';
const UCUM = 'http://unitsofmeasure.org';
const LABORATORY_CATEGORY: FhirCodeableConcept = {
  coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory', display: 'Laboratory' }],
};
const REPORT_CATEGORY: FhirCodeableConcept = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0074', code: 'LAB', display: 'Laboratory' }] };

export const FHIR_STATUS_OF_STATE: Record<ResultState, FhirDiagnosticReport['status']> = {
  partial: 'preliminary',
  final: 'final',
  corrected: 'corrected',
  amended: 'amended',
};

/**
 * Laboratory flags with an R4 interpretation (v3 ObservationInterpretation), matched on the
 * flag's trimmed, upper-cased text. Any other flag is kept as the laboratory's own coding only.
 */
export const FHIR_INTERPRETATION_OF_FLAG: Readonly<Record<string, { code: string; display: string }>> = {
  N: { code: 'N', display: 'Normal' },
  A: { code: 'A', display: 'Abnormal' },
  AA: { code: 'AA', display: 'Critical abnormal' },
  H: { code: 'H', display: 'High' },
  HH: { code: 'HH', display: 'Critical high' },
  L: { code: 'L', display: 'Low' },
  LL: { code: 'LL', display: 'Critical low' },
  '>': { code: '>', display: 'Off scale high' },
  '<': { code: '<', display: 'Off scale low' },
  POS: { code: 'POS', display: 'Positive' },
  NEG: { code: 'NEG', display: 'Negative' },
  DET: { code: 'DET', display: 'Detected' },
  ND: { code: 'ND', display: 'Not detected' },
  IND: { code: 'IND', display: 'Indeterminate' },
};

/**
 * Observations have free keys (the laboratory decides them): each R4 element is fed by the first
 * of the names laboratories use for it whose value it can carry (the console reads them the same
 * way). Every other supplied key, `unit` included, goes to the supplied-field extension.
 */
export const OBSERVATION_ROLES = {
  code: ['code', 'analyte_code', 'observation_code'],
  name: ['analyte', 'name', 'test_name', 'display'],
  value: ['value', 'result', 'result_value'],
  referenceInterval: ['reference_interval', 'reference_range', 'ref_range', 'range'],
  flag: ['abnormal_flag', 'flag', 'interpretation', 'abnormal_flags'],
  comment: ['comment', 'comments', 'note', 'notes'],
  // Only beside a value that is a plain decimal (a valueQuantity): R4 has no unit beside a valueString.
  unit: ['unit', 'units'],
  ucum: ['ucum_code', 'ucum'],
} as const;

type Role = keyof typeof OBSERVATION_ROLES;

/**
 * A value a `valueQuantity` carries exactly: an optional comparator (R4's `<`, `<=`, `>=`, `>`),
 * then a JSON number without exponent or leading zero. At most 18 digits, the precision R4 asks
 * every system to keep; `092`, `1e3`, ` 7.0 ` or `12345678901234567890` stay `valueString`.
 */
const PLAIN_DECIMAL_VALUE = /^(<=|>=|<|>)?(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?)$/;
const MAX_DECIMAL_DIGITS = 18;

function plainDecimal(value: unknown): { comparator?: '<' | '<=' | '>=' | '>'; digits: string } | null {
  if (typeof value !== 'string') return null;
  const found = PLAIN_DECIMAL_VALUE.exec(value);
  if (!found || found[2].replace(/[^0-9]/g, '').length > MAX_DECIMAL_DIGITS) return null;
  return { ...(found[1] ? { comparator: found[1] as '<' | '<=' | '>=' | '>' } : {}), digits: found[2] };
}

/** FHIR's `code` type: no leading, trailing or repeated whitespace. */
const FHIR_CODE = /^[^\s]+( [^\s]+)*$/;

/** A UUID derived from a name (RFC 4122 version 5 layout over SHA-1), so a version's bundle is the same on every read. */
function nameUuid(name: string): string {
  const hash = createHash('sha1').update(name).digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

export interface FhirSource {
  order: OrderRow;
  row: ResultRow;
  item: { labTestCode: string; name: string };
  /** The specimen the result was measured on: the order's newest specimen that was not rejected. */
  specimen: SpecimenRow | null;
  /** The released version that supersedes this one, if any. */
  supersededByResultId: string | null;
  /** The order's released versions before this one, oldest first: what a correction changed is read from them. */
  earlier: EarlierVersion[];
}

/** A supplied field FHIR has no element for, kept as it was sent (FHIR has no null and no empty string, so those are left out). */
function suppliedField(name: string, value: unknown): FhirExtension | null {
  if (value === null || value === '') return null;
  const held = typeof value === 'boolean' ? { url: 'value', valueBoolean: value } : { url: 'value', valueString: typeof value === 'string' ? value : JSON.stringify(value) };
  return { url: FHIR_EXTENSIONS.suppliedField, extension: [{ url: 'name', valueString: name }, held] };
}

function interpretationOf(flag: string, laboratoryId: string): FhirCodeableConcept {
  const known = FHIR_INTERPRETATION_OF_FLAG[flag.trim().toUpperCase()];
  const coding = [
    ...(known ? [{ system: V3_INTERPRETATION, code: known.code, display: known.display }] : []),
    ...(FHIR_CODE.test(flag) ? [{ system: FHIR_SYSTEMS.flag(laboratoryId), code: flag }] : []),
  ];
  return { ...(coding.length > 0 ? { coding } : {}), text: flag };
}

/** Which supplied key feeds each R4 element: the first name of its role whose value the element can carry. */
export function observationRoles(supplied: Record<string, unknown>): Partial<Record<Role, string>> {
  const carries: Record<Role, (value: unknown) => boolean> = {
    code: (v) => nonEmpty(v) && FHIR_CODE.test(v),
    name: nonEmpty,
    value: (v) => nonEmpty(v) || typeof v === 'boolean',
    referenceInterval: nonEmpty,
    flag: nonEmpty,
    comment: nonEmpty,
    unit: nonEmpty,
    ucum: (v) => nonEmpty(v) && FHIR_CODE.test(v),
  };
  const roles: Partial<Record<Role, string>> = {};
  for (const role of Object.keys(OBSERVATION_ROLES) as Role[]) {
    const key = OBSERVATION_ROLES[role].find((k) => k in supplied && carries[role](supplied[k]));
    if (key) roles[role] = key;
  }
  if (!roles.value || !plainDecimal(supplied[roles.value])) {
    delete roles.unit;
    delete roles.ucum;
  }
  return roles;
}

/**
 * The laboratory's name for each analyte of a version: its code, else its name, else its place
 * (`#3`); a name repeated within the version gets `#2`, `#3`… The same analyte of the same order
 * has the same key in every version, so it is the Observation's identifier, and what a correction
 * is compared on.
 */
export function analyteKeys(observations: readonly Record<string, unknown>[]): string[] {
  const seen = new Map<string, number>();
  return observations.map((supplied, index) => {
    const roles = observationRoles(supplied);
    const named = roles.code ?? roles.name;
    const base = named ? (supplied[named] as string) : `#${index + 1}`;
    const count = (seen.get(base) ?? 0) + 1;
    seen.set(base, count);
    return count === 1 ? base : `${base}#${count}`;
  });
}

/** An earlier released version of the same order, as a correction is compared with it. */
export interface EarlierVersion {
  state: string;
  observations: Record<string, unknown>[];
}

/**
 * Each observation's status. A correction or amendment marks only the analytes it changed (R4:
 * `corrected` is an Observation modified to correct an error; HL7 v2 sets OBX-11 = C on the changed
 * OBX only): an analyte the same in every version since the last final (or partial) one is `final`.
 * Comparing with all of them also catches a value corrected once and then put back.
 */
function observationStatuses(observations: readonly Record<string, unknown>[], status: FhirObservation['status'], earlier: readonly EarlierVersion[]): FhirObservation['status'][] {
  if (status !== 'corrected' && status !== 'amended') return observations.map(() => status);
  const sinceFinal = earlier.slice(Math.max(0, earlier.findLastIndex((v) => v.state !== 'corrected' && v.state !== 'amended')));
  const byKey = sinceFinal.map((version) => {
    const keys = analyteKeys(version.observations);
    return new Map(keys.map((key, i) => [key, version.observations[i]]));
  });
  const keys = analyteKeys(observations);
  return observations.map((supplied, i) => (byKey.length > 0 && byKey.every((version) => isDeepStrictEqual(version.get(keys[i]), supplied)) ? 'final' : status));
}

export function toFhirObservation(
  supplied: Record<string, unknown>,
  common: { laboratoryId: string; status: FhirObservation['status']; identifier: FhirIdentifier; subject: FhirReference; issued: string; effective?: string; specimen?: FhirReference },
): FhirObservation {
  const roles = observationRoles(supplied);
  const of = (role: Role) => (roles[role] === undefined ? undefined : supplied[roles[role]]);
  const mapped = new Set(Object.values(roles));
  const extension = Object.entries(supplied)
    .filter(([name]) => !mapped.has(name))
    .map(([name, held]) => suppliedField(name, held))
    .filter((field): field is FhirExtension => field !== null);
  const code = of('code') as string | undefined;
  const text = of('name') as string | undefined;
  const value = of('value');
  const interval = of('referenceInterval') as string | undefined;
  const flag = of('flag') as string | undefined;
  const comment = of('comment') as string | undefined;
  const observation: FhirObservation = {
    resourceType: 'Observation',
    ...(extension.length > 0 ? { extension } : {}),
    identifier: [common.identifier],
    status: common.status,
    category: [LABORATORY_CATEGORY],
    code:
      code || text
        ? { ...(code ? { coding: [{ system: FHIR_SYSTEMS.observationCode(common.laboratoryId), code }] } : {}), ...(text ? { text } : {}) }
        : { extension: [{ url: DATA_ABSENT_EXTENSION, valueCode: 'unknown' }] },
    subject: common.subject,
    ...(common.effective ? { effectiveDateTime: common.effective } : {}),
    issued: common.issued,
  };
  const decimal = plainDecimal(value);
  if (decimal) {
    const unit = of('unit') as string | undefined;
    const ucum = of('ucum') as string | undefined;
    observation.valueQuantity = {
      // The supplied digits as the JSON number's own text: `1.50` stays `1.50` in the bytes.
      value: fhirDecimal(decimal.digits),
      ...(decimal.comparator ? { comparator: decimal.comparator } : {}),
      ...(unit ? { unit } : {}),
      // A UCUM code only when the laboratory supplied one: none is derived from the unit text.
      ...(ucum ? { system: UCUM, code: ucum } : {}),
    };
  } else if (typeof value === 'string') observation.valueString = value;
  else if (typeof value === 'boolean') observation.valueBoolean = value;
  else observation.dataAbsentReason = { coding: [{ system: DATA_ABSENT_REASON, code: 'unknown', display: 'Unknown' }] };
  if (flag) observation.interpretation = [interpretationOf(flag, common.laboratoryId)];
  if (comment) observation.note = [{ text: comment }];
  if (common.specimen) observation.specimen = common.specimen;
  if (interval) observation.referenceRange = [{ text: interval }];
  return observation;
}

const resultReference = (resultId: string): FhirReference => ({ type: 'DiagnosticReport', identifier: { system: FHIR_SYSTEMS.resultId, value: resultId } });

export function toFhirBundle({ order, row, item, specimen, supersededByResultId, earlier }: FhirSource): FhirBundle {
  if (row.status !== 'released' || row.version === null || !row.releasedAt) throw new Error(`result ${row.id} is not released`);
  const laboratoryId = order.laboratoryId;
  const status = FHIR_STATUS_OF_STATE[row.state as ResultState];
  const issued = row.releasedAt.toISOString();
  const effective = specimen?.collectedAt?.toISOString();
  const subject: FhirReference = { type: 'Patient', identifier: { system: FHIR_SYSTEMS.externalSubjectId, value: order.externalSubjectId } };
  const specimenUrl = specimen ? `urn:uuid:${specimen.id}` : null;
  const specimenReference = specimenUrl ? { reference: specimenUrl } : undefined;

  const supplied = row.observations as Record<string, unknown>[];
  const keys = analyteKeys(supplied);
  const statuses = observationStatuses(supplied, status, earlier);
  const observations = supplied.map((fields, index) => ({
    fullUrl: `urn:uuid:${nameUuid(`${row.id}/observation/${index}`)}`,
    resource: toFhirObservation(fields, {
      laboratoryId,
      status: statuses[index],
      identifier: { system: FHIR_SYSTEMS.orderObservation(order.id), value: keys[index] },
      subject,
      issued,
      effective,
      specimen: specimenReference,
    }),
  }));

  const extension: FhirExtension[] = [{ url: FHIR_EXTENSIONS.critical, valueBoolean: row.isCritical }];
  if (row.supersedesResultId) extension.push({ url: FHIR_EXTENSIONS.replaces, valueReference: resultReference(row.supersedesResultId) });
  if (supersededByResultId) extension.push({ url: FHIR_EXTENSIONS.supersededBy, valueReference: resultReference(supersededByResultId) });

  const report: FhirDiagnosticReport = {
    resourceType: 'DiagnosticReport',
    extension,
    identifier: [
      { use: 'official', system: FHIR_SYSTEMS.resultId, value: row.id },
      { use: 'secondary', system: FHIR_SYSTEMS.resultVersion(order.id), value: String(row.version) },
      { use: 'secondary', system: FHIR_SYSTEMS.sourceResultId(laboratoryId), value: row.sourceResultId, assigner: { display: row.performingLaboratorySystem } },
      { use: 'usual', system: FHIR_SYSTEMS.orderReport, value: order.id },
    ],
    basedOn: [{ type: 'ServiceRequest', identifier: { system: FHIR_SYSTEMS.orderId, value: order.id } }],
    status,
    category: [REPORT_CATEGORY],
    code: { coding: [{ system: FHIR_SYSTEMS.testCode(laboratoryId), code: item.labTestCode }], text: item.name },
    subject,
    ...(effective ? { effectiveDateTime: effective } : {}),
    issued,
    performer: [{ type: 'Organization', display: row.performingLaboratory }],
    ...(specimenReference ? { specimen: [specimenReference] } : {}),
    result: observations.map((entry) => ({ reference: entry.fullUrl })),
  };

  const entry: FhirBundle['entry'] = [{ fullUrl: `urn:uuid:${row.id}`, resource: report }, ...observations];
  if (specimen && specimenUrl) entry.push({ fullUrl: specimenUrl, resource: toFhirSpecimen(specimen, order, subject) });
  return { resourceType: 'Bundle', type: 'collection', timestamp: issued, entry };
}

function toFhirSpecimen(specimen: SpecimenRow, order: OrderRow, subject: FhirReference): FhirSpecimen {
  const accession = specimen.accessionNumber ?? order.accessionNumber;
  return {
    resourceType: 'Specimen',
    identifier: [{ system: FHIR_SYSTEMS.specimenCode(order.laboratoryId), value: specimen.specimenCode }],
    ...(accession ? { accessionIdentifier: { system: FHIR_SYSTEMS.accessionNumber(order.laboratoryId), value: accession } } : {}),
    type: { text: specimen.specimenType },
    subject,
    ...(specimen.receivedAt ? { receivedTime: specimen.receivedAt.toISOString() } : {}),
    ...(specimen.collectedAt ? { collection: { collectedDateTime: specimen.collectedAt.toISOString() } } : {}),
  };
}

/** The newest specimen of the order that was not rejected: the one a result can have been measured on. */
async function resultSpecimenOf(db: Reader, orderId: string): Promise<SpecimenRow | null> {
  const rows = await db.select().from(specimens).where(eq(specimens.orderId, orderId)).orderBy(asc(specimens.createdAt), asc(specimens.id));
  return rows.filter((s) => s.status !== 'rejected').at(-1) ?? null;
}

/** GET /v1/orders/{orderId}/results/{resultId}/fhir — the same authorization as the result itself (findReleasedResult). */
export async function getResultFhir(db: Database, caller: Caller, orderId: string, resultId: string): Promise<FhirBundle> {
  const { order, row } = await findReleasedResult(db, caller, orderId, resultId);
  const [[item], specimen, [newer], earlier] = await Promise.all([
    db.select({ labTestCode: catalogItems.labTestCode, name: catalogItems.name }).from(catalogItems).where(eq(catalogItems.id, order.itemId)),
    resultSpecimenOf(db, order.id),
    db
      .select({ id: resultVersions.id })
      .from(resultVersions)
      .where(and(eq(resultVersions.orderId, order.id), eq(resultVersions.supersedesResultId, row.id), eq(resultVersions.status, 'released'))),
    db
      .select({ state: resultVersions.state, observations: resultVersions.observations })
      .from(resultVersions)
      .where(and(eq(resultVersions.orderId, order.id), eq(resultVersions.status, 'released'), lt(resultVersions.version, row.version!)))
      .orderBy(asc(resultVersions.version)),
  ]);
  return toFhirBundle({ order, row, item, specimen, supersededByResultId: newer?.id ?? null, earlier: earlier as EarlierVersion[] });
}
