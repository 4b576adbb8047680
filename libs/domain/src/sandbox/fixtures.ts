import { randomBytes } from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import { catalogItems, programGrants, programs, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import type { CatalogItemRow } from '../catalog/catalog';
import type { CreateOrderBody } from '../orders/orders.schemas';
import type { ProgramRow } from '../programs/programs';
import { checkOrderAgainstRequirements } from '../orders/order-check';
import { resolveRequirements, type ResolvedRequirements } from '../requirements/requirements';
import type { AoeQuestion, RequirementsProfile } from '../requirements/requirements.schemas';
import { SANDBOX_SUBJECT_ID } from '../subjects/subjects';
import { FIXTURE_CONTRACTS, type FixtureContract, type OrderFixture } from './sandbox.schemas';

// The synthetic subject every fixture orders for: built into every client's sandbox (subjects.ts).
export { SANDBOX_SUBJECT_ID };

/** A stable, obviously synthetic provider (the NPI has a valid check digit but belongs to no one we know of). */
const SANDBOX_PROVIDER = { provider_reference: '5a4d6b1e-0c3f-4e7a-9b2d-1f0e8c7a6b5d', name: 'Dr. Sandbox Provider', npi: '1234567893' };

/** Synthetic patient values by field name, in the formats create accepts. */
const SANDBOX_PATIENT: Record<string, string> = {
  legal_first_name: 'Sandy',
  legal_last_name: 'Synthetic',
  date_of_birth: '1985-04-12',
  sex_at_birth: 'female',
  phone: '+1-555-0100',
  email: 'sandy.synthetic@example.com',
  address_line1: '100 Example Street',
  address_line2: 'Suite 1',
  city: 'Springfield',
  postal_code: '00000',
  country: 'US',
};

const DESCRIPTIONS: Record<FixtureContract, string> = {
  minimal: 'Only the fields every order needs: a test whose requirements profile asks for nothing more.',
  provider: 'A test whose requirements profile requires an ordering provider: the body carries ordering_provider.',
  patient: 'A test whose requirements profile requires patient fields: the body carries a synthetic patient.',
  aoe: 'A test with ask-at-order-entry questions: the body answers them in aoe_answers.',
};

/** Which contracts an item's requirements profile exercises. */
function contractsOf(profile: RequirementsProfile): Set<Exclude<FixtureContract, 'minimal'>> {
  const found = new Set<Exclude<FixtureContract, 'minimal'>>();
  if (profile.provider.requirement === 'required') found.add('provider');
  if (profile.subject.required_patient_fields.length > 0) found.add('patient');
  if (profile.aoe.questions.length > 0) found.add('aoe');
  return found;
}

function answerFor(question: AoeQuestion): string {
  switch (question.answer_type) {
    case 'single_choice':
      return question.options[0] ?? '';
    case 'boolean':
      return 'false';
    case 'date':
      return '2025-01-15';
    case 'number':
      return '0';
    default:
      return 'Synthetic answer';
  }
}

/** Values for order fields a profile may require beyond the ones every body carries. */
function orderFieldValue(field: string, requirements: ResolvedRequirements, region: string): unknown {
  switch (field) {
    case 'region':
      return region;
    case 'billing_mode':
      return requirements.billingModes[0] ?? 'client_bill';
    case 'requested_collection_at':
      return new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 15, 9)).toISOString();
    case 'clinical_notes':
      return 'Synthetic sandbox order; no clinical content.';
    case 'collection_location':
      return 'sandbox-collection-location';
    default:
      return undefined;
  }
}

/** A body that meets the profile: every required field, and nothing the profile does not ask for. */
function buildBody(externalOrderId: string, program: ProgramRow, item: CatalogItemRow, requirements: ResolvedRequirements, region: string): CreateOrderBody {
  const { profile } = requirements;
  const body: CreateOrderBody = {
    external_order_id: externalOrderId,
    program_id: program.id,
    item_id: item.id,
    external_subject_id: SANDBOX_SUBJECT_ID,
    collection: profile.collection.methods[0],
    region,
  };
  for (const field of profile.order.required_fields) {
    if ((body as Record<string, unknown>)[field] !== undefined) continue;
    const value = orderFieldValue(field, requirements, region);
    if (value !== undefined) (body as Record<string, unknown>)[field] = value;
  }
  if (profile.subject.required_patient_fields.length > 0) {
    body.patient = Object.fromEntries(profile.subject.required_patient_fields.map((f) => [f, f === 'region' ? region : SANDBOX_PATIENT[f]]).filter(([, v]) => v !== undefined));
  }
  if (profile.provider.requirement === 'required') {
    const fields = profile.provider.required_fields.length > 0 ? profile.provider.required_fields : ['provider_reference', 'name'];
    body.ordering_provider = Object.fromEntries(fields.filter((f) => f in SANDBOX_PROVIDER).map((f) => [f, SANDBOX_PROVIDER[f as keyof typeof SANDBOX_PROVIDER]]));
  }
  const questions = profile.aoe.questions.filter((q) => q.required);
  if (questions.length > 0) body.aoe_answers = questions.map((q) => ({ question_key: q.question_key, answer: answerFor(q) }));
  return body;
}

interface Candidate {
  program: ProgramRow;
  item: CatalogItemRow;
  requirements: ResolvedRequirements;
  region: string;
  contracts: Set<Exclude<FixtureContract, 'minimal'>>;
}

/** Active items of the client's granted, active programs in this environment, in catalog order. */
async function grantedItems(db: Database, caller: Caller): Promise<{ program: ProgramRow; item: CatalogItemRow }[]> {
  const rows = await db
    .select({ program: programs, item: catalogItems })
    .from(programs)
    .innerJoin(programGrants, and(eq(programGrants.programId, programs.id), eq(programGrants.clientId, caller.clientId)))
    .innerJoin(catalogItems, and(eq(catalogItems.programId, programs.id), eq(catalogItems.status, 'active')))
    .where(and(eq(programs.laboratoryId, caller.laboratoryId), eq(programs.environment, caller.environment), eq(programs.status, 'active')))
    .orderBy(asc(programs.name), asc(programs.id), asc(catalogItems.sortOrder), asc(catalogItems.code), asc(catalogItems.id));
  return rows;
}

/**
 * A test a template can be built for: the body it would carry passes the same check create
 * applies. Region: the first the profile serves, so the body also meets region-specific rules.
 */
async function candidateFor(db: Database, caller: Caller, program: ProgramRow, item: CatalogItemRow): Promise<Candidate | null> {
  const general = await resolveRequirements(db, caller, program, item);
  const region = general.profile.collection.regions[0];
  if (!region || general.profile.collection.methods.length === 0) return null;
  const requirements = await resolveRequirements(db, caller, program, item, region);
  if (requirements.profile.collection.methods.length === 0) return null;
  if (checkOrderAgainstRequirements(requirements, buildBody('sandbox-check', program, item, requirements, region)).length > 0) return null;
  return { program, item, requirements, region, contracts: contractsOf(requirements.profile) };
}

/**
 * The best candidate for a contract: one whose profile asks for exactly that kind of data (or for
 * nothing, for `minimal`), falling back to one that asks for it among others.
 */
function pick(candidates: Candidate[], contract: FixtureContract): Candidate | undefined {
  if (contract === 'minimal') return candidates.find((c) => c.contracts.size === 0);
  const matching = candidates.filter((c) => c.contracts.has(contract));
  return matching.find((c) => c.contracts.size === 1) ?? matching.sort((a, b) => a.contracts.size - b.contracts.size)[0];
}

const UNAVAILABLE: Record<FixtureContract, string> = {
  minimal: 'None of your granted, active sandbox tests can be ordered with only the minimal fields.',
  provider: 'None of your granted, active sandbox tests requires an ordering provider.',
  patient: 'None of your granted, active sandbox tests requires patient fields.',
  aoe: 'None of your granted, active sandbox tests has ask-at-order-entry questions.',
};

/**
 * GET /v1/sandbox/order-fixtures: one request template per ordering contract, built from the
 * calling client's granted sandbox tests and their requirements profiles. A production key gets
 * an empty list: fixtures would create real orders there, and nothing synthetic exists in production.
 * It reads only: the fixtures' subject is built into the sandbox (SANDBOX_SUBJECT_ID), not registered here.
 */
export async function listOrderFixtures(db: Database, caller: Caller): Promise<OrderFixture[]> {
  if (caller.environment !== 'sandbox') return [];

  const candidates: Candidate[] = [];
  const complete = () => FIXTURE_CONTRACTS.every((contract) => pick(candidates, contract)?.contracts.size === (contract === 'minimal' ? 0 : 1));
  for (const { program, item } of await grantedItems(db, caller)) {
    const candidate = await candidateFor(db, caller, program, item);
    if (candidate) candidates.push(candidate);
    if (complete()) break;
  }

  return FIXTURE_CONTRACTS.map((contract): OrderFixture => {
    const chosen = pick(candidates, contract);
    if (chosen) {
      return {
        contract,
        available: true,
        description: `${DESCRIPTIONS[contract]} Test: ${chosen.item.name} (${chosen.item.code}) in ${chosen.program.name}.`,
        body: buildBody(`sandbox-${contract}-${randomBytes(6).toString('hex')}`, chosen.program, chosen.item, chosen.requirements, chosen.region),
        requirements_path: `/v1/programs/${chosen.program.id}/requirements?item_id=${chosen.item.id}&region=${encodeURIComponent(chosen.region)}`,
        unavailable_reason: null,
      };
    }
    return { contract, available: false, description: DESCRIPTIONS[contract], body: null, requirements_path: null, unavailable_reason: UNAVAILABLE[contract] };
  });
}
