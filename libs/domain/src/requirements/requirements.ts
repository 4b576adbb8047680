import { and, asc, eq, isNull, or, sql } from 'drizzle-orm';
import { aoeQuestions, preparedStatement, requirementProfiles, type Executor } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import type { CatalogItemRow } from '../catalog/catalog';
import type { ProgramRow } from '../programs/programs';
import type { AoeQuestion, RequirementsProfile } from './requirements.schemas';

type ProfileRow = typeof requirementProfiles.$inferSelect;

/** Resolved requirements, plus the billing modes accepted (used when an order is checked). */
export interface ResolvedRequirements {
  profile: RequirementsProfile;
  billingModes: string[];
}

/**
 * The most specific profile for (program, item, region): item-specific beats program-wide,
 * then region-specific beats any-region. Absent profile → every facet not_configured.
 */
const profileRow = preparedStatement((db) =>
  db
    .select()
    .from(requirementProfiles)
    .where(
      and(
        eq(requirementProfiles.programId, sql.placeholder('programId')),
        // A null item or region compares as unknown, leaving only the rows that apply to any.
        or(eq(requirementProfiles.itemId, sql.placeholder('itemId')), isNull(requirementProfiles.itemId)),
        or(eq(requirementProfiles.region, sql.placeholder('region')), isNull(requirementProfiles.region)),
      ),
    )
    .orderBy(sql`(${requirementProfiles.itemId} is not null) desc`, sql`(${requirementProfiles.region} is not null) desc`)
    .limit(1)
    .prepare('requirement_profile'),
);

const profileQuestions = preparedStatement((db) =>
  db
    .select()
    .from(aoeQuestions)
    .where(eq(aoeQuestions.requirementProfileId, sql.placeholder('profileId')))
    .orderBy(asc(aoeQuestions.sortOrder), asc(aoeQuestions.questionKey))
    .prepare('requirement_profile_questions'),
);

async function findProfileRow(db: Executor, programId: string, itemId?: string, region?: string): Promise<ProfileRow | null> {
  const [row] = await profileRow(db).execute({ programId, itemId: itemId ?? null, region: region ?? null });
  return row ?? null;
}

const configured = (state: 'configured' | 'not_configured') => state === 'configured';

export async function resolveRequirements(
  db: Executor,
  caller: Caller,
  program: ProgramRow,
  item: CatalogItemRow | null,
  region?: string,
): Promise<ResolvedRequirements> {
  const row = await findProfileRow(db, program.id, item?.id, region);
  const questions: AoeQuestion[] =
    row && configured(row.aoeAuthorityState)
      ? (
          await profileQuestions(db).execute({ profileId: row.id })
        ).map((q) => ({
          question_key: q.questionKey,
          prompt: q.prompt,
          answer_type: q.answerType as AoeQuestion['answer_type'],
          options: q.options,
          required: q.required,
          version: q.version,
        }))
      : [];

  // Collection: the narrowest of program, item and profile settings.
  const programMethods = program.collectionMethods;
  const itemMethods = item && item.collectionMethods.length > 0 ? item.collectionMethods : programMethods;
  const methods = row && row.collectionMethods.length > 0 ? row.collectionMethods.filter((m) => itemMethods.includes(m)) : itemMethods;
  const regions = row && row.collectionRegions.length > 0 ? row.collectionRegions : program.serviceGeography;

  const subjectOn = !!row && configured(row.subjectAuthorityState);
  const orderOn = !!row && configured(row.orderAuthorityState);
  const providerOn = !!row && configured(row.providerAuthorityState);
  const billingOn = !!row && configured(row.billingAuthorityState);
  const billingModeRequired = billingOn && row.billingModeRequired;
  // A required billing mode is a required order field: the profile lists it where a partner reads
  // what an order must carry, and create checks that one list.
  const orderRequiredFields = [...new Set([...(orderOn ? row.orderRequiredFields : []), ...(billingModeRequired ? ['billing_mode'] : [])])];

  const profile: RequirementsProfile = {
    program_id: program.id,
    ...(item ? { item_id: item.id } : {}),
    jurisdiction: row?.jurisdiction ?? program.jurisdiction,
    environment: caller.environment,
    subject: {
      mode: 'opaque_reference',
      required_patient_fields: subjectOn ? row.subjectRequiredPatientFields : [],
      authority_state: subjectOn ? 'configured' : 'not_configured',
    },
    order: { required_fields: orderRequiredFields, authority_state: orderOn ? 'configured' : 'not_configured' },
    provider: {
      requirement: providerOn && row.providerRequirement === 'required' ? 'required' : 'not_required',
      required_fields: providerOn && row.providerRequirement === 'required' ? row.providerRequiredFields : [],
      authority_state: providerOn ? 'configured' : 'not_configured',
      license_authority_state: 'not_modeled',
    },
    aoe: { authority_state: row && configured(row.aoeAuthorityState) ? 'configured' : 'not_configured', questions },
    clinical: {
      policy: row?.clinicalPolicy ?? 'not_configured',
      ordering_model: row?.clinicalOrderingModel ?? 'not_configured',
      clinical_review: row?.clinicalReview ?? 'not_configured',
      intake_required: row?.clinicalIntakeRequired ?? false,
      requirement_id: row?.id ?? null,
      requirement_state: row?.requirementState ?? 'not_configured',
    },
    collection: { methods, regions },
    billing: { mode_required: billingModeRequired, authority_state: billingOn ? 'configured' : 'not_configured', accepted_modes: billingOn ? row.billingModes : [] },
  };
  return { profile, billingModes: profile.billing.accepted_modes };
}
