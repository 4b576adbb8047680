import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { SCOPES } from '@lop/contract';
import { and, eq, inArray, isNull } from 'drizzle-orm';
import { aoeQuestions, apiClients, apiKeys, catalogItems, laboratories, locations, programs, requirementProfiles, type Database } from '@lop/db';
import { hashApiKey, keyEnvironment } from '../auth/api-key';
import { createKey, grantPrograms } from './control-plane';

/** Stable identifiers, so seeding twice finds the same rows instead of duplicating them. */
export function demoId(name: string): string {
  const h = createHash('sha256').update(`demo:${name}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16], 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const LAB = demoId('laboratory');
const CLIENT = demoId('client');

type Env = 'sandbox' | 'production';

const PROGRAMS: { key: string; environment: Env; name: string; status: 'active' | 'inactive'; currency: string; jurisdiction: string; geography: string[]; methods: string[] }[] = [
  { key: 'wellness-sbx', environment: 'sandbox', name: 'Everyday Wellness (Sandbox)', status: 'active', currency: 'USD', jurisdiction: 'US', geography: ['US-CA', 'US-NY', 'US-TX'], methods: ['in_person_draw', 'mobile_phlebotomy', 'at_home_kit'] },
  { key: 'womens-sbx', environment: 'sandbox', name: "Women's Health (Sandbox)", status: 'active', currency: 'USD', jurisdiction: 'US', geography: ['US-CA', 'US-NY'], methods: ['in_person_draw'] },
  { key: 'canada-sbx', environment: 'sandbox', name: 'Ontario Pilot (Sandbox)', status: 'active', currency: 'CAD', jurisdiction: 'CA-ON', geography: ['CA-ON'], methods: ['in_person_draw'] },
  { key: 'legacy-sbx', environment: 'sandbox', name: 'Legacy Screening (Sandbox, retired)', status: 'inactive', currency: 'USD', jurisdiction: 'US', geography: ['US-WA'], methods: ['in_person_draw'] },
  { key: 'wellness-prod', environment: 'production', name: 'Everyday Wellness', status: 'active', currency: 'USD', jurisdiction: 'US', geography: ['US-CA', 'US-NY', 'US-TX'], methods: ['in_person_draw', 'mobile_phlebotomy', 'at_home_kit'] },
  { key: 'womens-prod', environment: 'production', name: "Women's Health", status: 'active', currency: 'USD', jurisdiction: 'US', geography: ['US-CA', 'US-NY'], methods: ['in_person_draw'] },
];

const TESTS = [
  { code: 'CBC', labTestCode: '005009', externalCode: '85025', name: 'Complete Blood Count with Differential', kind: 'panel', specimenType: 'whole_blood', container: 'Lavender-top EDTA tube', minVolumeMl: 3, methods: ['in_person_draw', 'mobile_phlebotomy'] },
  { code: 'HBA1C', labTestCode: '001453', externalCode: '83036', name: 'Hemoglobin A1c', kind: 'test', specimenType: 'whole_blood', container: 'Lavender-top EDTA tube', minVolumeMl: 2, methods: ['in_person_draw', 'mobile_phlebotomy'] },
  { code: 'LIPID', labTestCode: '303756', externalCode: '80061', name: 'Lipid Panel', kind: 'panel', specimenType: 'serum', container: 'Gold-top serum separator tube', minVolumeMl: 1.5, methods: ['in_person_draw', 'mobile_phlebotomy'] },
  { code: 'TSH', labTestCode: '004259', externalCode: '84443', name: 'Thyroid Stimulating Hormone', kind: 'test', specimenType: 'serum', container: 'Gold-top serum separator tube', minVolumeMl: 1, methods: ['in_person_draw'] },
  { code: 'VITD', labTestCode: '081950', externalCode: '82306', name: 'Vitamin D, 25-Hydroxy', kind: 'test', specimenType: 'serum', container: 'Gold-top serum separator tube', minVolumeMl: 1, methods: ['in_person_draw', 'at_home_kit'] },
  { code: 'UA', labTestCode: '003772', externalCode: '81001', name: 'Urinalysis, Complete', kind: 'panel', specimenType: 'urine', container: 'Sterile urine cup', minVolumeMl: 10, methods: ['in_person_draw'] },
];

const LOCATIONS: { code: string; environment: Env; name: string; region: string; city: string; country: string; timezone: string; methods: string[]; appointment: boolean; walkIn: boolean; status: 'active' | 'inactive' }[] = [
  { code: 'LA-01', environment: 'sandbox', name: 'Downtown Los Angeles Patient Service Center', region: 'US-CA', city: 'Los Angeles', country: 'US', timezone: 'America/Los_Angeles', methods: ['in_person_draw'], appointment: false, walkIn: true, status: 'active' },
  { code: 'SF-02', environment: 'sandbox', name: 'Mission Bay Patient Service Center', region: 'US-CA', city: 'San Francisco', country: 'US', timezone: 'America/Los_Angeles', methods: ['in_person_draw'], appointment: true, walkIn: false, status: 'active' },
  { code: 'SD-03', environment: 'sandbox', name: 'San Diego Service Center (closed for renovation)', region: 'US-CA', city: 'San Diego', country: 'US', timezone: 'America/Los_Angeles', methods: ['in_person_draw'], appointment: false, walkIn: true, status: 'inactive' },
  { code: 'NY-01', environment: 'sandbox', name: 'Midtown Manhattan Patient Service Center', region: 'US-NY', city: 'New York', country: 'US', timezone: 'America/New_York', methods: ['in_person_draw'], appointment: true, walkIn: true, status: 'active' },
  { code: 'TX-01', environment: 'sandbox', name: 'Austin North Patient Service Center', region: 'US-TX', city: 'Austin', country: 'US', timezone: 'America/Chicago', methods: ['in_person_draw'], appointment: false, walkIn: true, status: 'active' },
  { code: 'ON-01', environment: 'sandbox', name: 'Toronto Yonge Street Collection Centre', region: 'CA-ON', city: 'Toronto', country: 'CA', timezone: 'America/Toronto', methods: ['in_person_draw'], appointment: true, walkIn: true, status: 'active' },
  { code: 'WA-01', environment: 'sandbox', name: 'Seattle Service Center', region: 'US-WA', city: 'Seattle', country: 'US', timezone: 'America/Los_Angeles', methods: ['in_person_draw'], appointment: false, walkIn: true, status: 'active' },
  { code: 'LA-01', environment: 'production', name: 'Downtown Los Angeles Patient Service Center', region: 'US-CA', city: 'Los Angeles', country: 'US', timezone: 'America/Los_Angeles', methods: ['in_person_draw'], appointment: false, walkIn: true, status: 'active' },
  { code: 'NY-01', environment: 'production', name: 'Midtown Manhattan Patient Service Center', region: 'US-NY', city: 'New York', country: 'US', timezone: 'America/New_York', methods: ['in_person_draw'], appointment: true, walkIn: true, status: 'active' },
];

export interface DemoTenant {
  laboratory_id: string;
  client_id: string;
  programs: { program_id: string; name: string; environment: Env }[];
}

export interface DemoSeedResult extends DemoTenant {
  sandbox_key: string;
  sandbox_key_id: string;
}

/**
 * A demo laboratory with sandbox and production programs, a realistic catalog, locations in
 * several regions and countries, and requirements exercising every facet, and the demo client
 * granted every program. Idempotent: rows are found by stable ids. Issues no key.
 */
export async function seedDemoTenant(db: Database): Promise<DemoTenant> {
  await db.transaction(async (tx) => {
    await tx
      .insert(laboratories)
      .values({
        id: LAB,
        displayName: 'Northwind Clinical Laboratories',
        legalName: 'Northwind Clinical Laboratories, Inc.',
        operatingName: 'Northwind Labs',
        certificationIdentifiers: ['CLIA 05D0000000', 'CAP 0000000'],
        jurisdictions: ['US', 'CA-ON'],
        serviceGeography: ['US-CA', 'US-NY', 'US-TX', 'US-WA', 'CA-ON'],
        collectionMethods: ['in_person_draw', 'mobile_phlebotomy', 'at_home_kit'],
        collectionModes: ['walk_in', 'appointment', 'kit_by_mail'],
        specimenCategories: ['whole_blood', 'serum', 'urine'],
        codingSystemsSupplied: ['lab_local', 'CPT'],
      })
      .onConflictDoNothing();
    await tx.insert(apiClients).values({ id: CLIENT, laboratoryId: LAB, name: 'Demo Digital Health' }).onConflictDoNothing();

    for (const p of PROGRAMS) {
      await tx
        .insert(programs)
        .values({ id: demoId(`program:${p.key}`), laboratoryId: LAB, environment: p.environment, name: p.name, status: p.status, currency: p.currency, jurisdiction: p.jurisdiction, serviceGeography: p.geography, collectionMethods: p.methods })
        .onConflictDoNothing();
      const tests = p.key.startsWith('womens') ? TESTS.filter((t) => ['CBC', 'TSH', 'VITD'].includes(t.code)) : p.key.startsWith('canada') ? TESTS.filter((t) => ['CBC', 'LIPID'].includes(t.code)) : TESTS;
      await tx
        .insert(catalogItems)
        .values(
          tests.map((t, i) => ({
            id: demoId(`item:${p.key}:${t.code}`),
            programId: demoId(`program:${p.key}`),
            labOrderableId: demoId(`orderable:${t.code}`),
            labTestCode: t.labTestCode,
            code: t.code,
            description: `${t.name} (${t.specimenType.replace('_', ' ')})`,
            externalCode: t.externalCode,
            name: t.name,
            kind: t.kind,
            performingLaboratory: 'Northwind Clinical Laboratories, Central Lab',
            specimenType: t.specimenType,
            container: t.container,
            minVolumeMl: t.minVolumeMl,
            collectionMethods: t.methods.filter((m) => p.methods.includes(m)),
            sortOrder: i,
          })),
        )
        .onConflictDoNothing();
    }

    await tx
      .insert(locations)
      .values(
        LOCATIONS.map((l) => ({
          id: demoId(`location:${l.environment}:${l.code}`),
          laboratoryId: LAB,
          environment: l.environment,
          locationCode: l.code,
          name: l.name,
          region: l.region,
          city: l.city,
          country: l.country,
          timezone: l.timezone,
          collectionMethods: l.methods,
          appointmentRequired: l.appointment,
          walkInAllowed: l.walkIn,
          serviceStatus: l.status,
          // Kept for operations, never returned to partners.
          streetAddress: `${100 + l.code.charCodeAt(0)} Example Street`,
          telephone: '+1-555-0100',
          operationalNotes: 'Courier pickup 16:00; freezer in room B.',
        })),
      )
      .onConflictDoNothing();

    for (const environment of ['sandbox', 'production'] as const) {
      const wellness = environment === 'sandbox' ? 'wellness-sbx' : 'wellness-prod';
      const program = demoId(`program:${wellness}`);
      const item = (code: string) => demoId(`item:${wellness}:${code}`);
      // Program-wide baseline: order fields and billing configured; subject, provider and ask-at-order-entry not configured.
      const base = {
        programId: program,
        jurisdiction: 'US',
        orderAuthorityState: 'configured' as const,
        orderRequiredFields: ['external_order_id', 'program_id', 'item_id', 'external_subject_id', 'collection'],
        billingAuthorityState: 'configured' as const,
        billingModeRequired: false,
        billingModes: ['client_bill', 'insurance', 'self_pay'],
        clinicalPolicy: 'partner_physician_network',
        clinicalOrderingModel: 'partner_ordering_provider',
        clinicalReview: 'not_required',
      };
      const profiles = [
        { key: 'base', ...base },
        // New York requires the billing mode to be stated.
        { key: 'ny', ...base, region: 'US-NY', jurisdiction: 'US-NY', billingModeRequired: true },
        // HbA1c: an ordering provider is required.
        { key: 'hba1c', ...base, itemId: item('HBA1C'), providerAuthorityState: 'configured' as const, providerRequirement: 'required', providerRequiredFields: ['provider_reference', 'name', 'npi'], clinicalReview: 'provider_review' },
        // Lipid panel: patient demographics are required on the order.
        { key: 'lipid', ...base, itemId: item('LIPID'), subjectAuthorityState: 'configured' as const, subjectRequiredPatientFields: ['legal_first_name', 'legal_last_name', 'date_of_birth', 'sex_at_birth'] },
        // TSH: ask-at-order-entry questions.
        { key: 'tsh', ...base, itemId: item('TSH'), aoeAuthorityState: 'configured' as const, clinicalIntakeRequired: true, collectionMethods: ['in_person_draw'] },
      ];
      for (const { key, ...profile } of profiles) {
        await tx.insert(requirementProfiles).values({ id: demoId(`requirements:${environment}:${key}`), ...profile }).onConflictDoNothing();
      }
      await tx
        .insert(aoeQuestions)
        .values([
          { id: demoId(`aoe:${environment}:fasting`), requirementProfileId: demoId(`requirements:${environment}:tsh`), questionKey: 'fasting_status', prompt: 'Has the patient fasted for at least 8 hours?', answerType: 'single_choice', options: ['yes', 'no', 'unknown'], required: true, version: 1, sortOrder: 0 },
          { id: demoId(`aoe:${environment}:medication`), requirementProfileId: demoId(`requirements:${environment}:tsh`), questionKey: 'thyroid_medication', prompt: 'Is the patient taking thyroid medication?', answerType: 'boolean', options: [], required: true, version: 2, sortOrder: 1 },
          { id: demoId(`aoe:${environment}:last_dose`), requirementProfileId: demoId(`requirements:${environment}:tsh`), questionKey: 'last_dose_date', prompt: 'Date of the last dose, if any.', answerType: 'date', options: [], required: false, version: 1, sortOrder: 2 },
        ])
        .onConflictDoNothing();
    }
  });

  await grantPrograms(db, { clientId: CLIENT, environment: 'sandbox', all: true });
  await grantPrograms(db, { clientId: CLIENT, environment: 'production', all: true });
  const seeded = await db.select({ id: programs.id, name: programs.name, environment: programs.environment }).from(programs);
  return {
    laboratory_id: LAB,
    client_id: CLIENT,
    programs: seeded.filter((p) => PROGRAMS.some((d) => demoId(`program:${d.key}`) === p.id)).map((p) => ({ program_id: p.id, name: p.name, environment: p.environment })),
  };
}

/**
 * The demo tenant and a new, ordinary all-scope sandbox key for the demo client on every call:
 * for tests and benchmarks, which each want a key of their own in their own database. What a
 * person runs (`npm start`, `admin seed-demo`) uses seedDemoWithBannerKey instead.
 */
export async function seedDemo(db: Database): Promise<DemoSeedResult> {
  const tenant = await seedDemoTenant(db);
  const key = await createKey(db, { clientId: CLIENT, environment: 'sandbox', scopes: [...SCOPES] });
  return { ...tenant, sandbox_key: key.key, sandbox_key_id: key.key_id };
}

/** `api_keys.purpose` of the sandbox key `npm start` prints; no other key is ever rotated by it. */
export const BANNER_KEY_PURPOSE = 'demo_banner';

/** Where the banner key's text is kept, in the data folder (PARTNER_DATA_DIR), mode 0600. */
export const bannerKeyFile = (dataDir: string) => join(dataDir, 'sandbox-key');

/**
 * `reused`: the key kept in the data folder, still active. `created`: there was no active banner
 * key. `replaced`: the active one was revoked, because its text was lost (another data folder,
 * DATABASE_URL pointing elsewhere) or a new one was asked for.
 */
export type BannerKeyStatus = 'reused' | 'created' | 'replaced';

/** How the key came to be, so nobody wonders whether yesterday's still works: `npm start`'s banner and `admin seed-demo` print it. */
export function bannerKeyNote(status: BannerKeyStatus, file: string): string {
  const where = relative(process.cwd(), file) || file;
  if (status === 'reused') return `all scopes; the same key as last start, kept in ${where}`;
  if (status === 'replaced') return `all scopes; NEW: the previous banner key is revoked (its copy in ${where} was missing, or a new one was asked for)`;
  return `all scopes; kept in ${where}, the same on every start`;
}

export interface DemoBannerSeedResult extends DemoSeedResult {
  sandbox_key_status: BannerKeyStatus;
  sandbox_key_file: string;
}

/**
 * The demo tenant and its banner key: at most one active at a time, and the same one from start
 * to start, because a developer pastes it into code, a Postman environment or the console and
 * expects it to keep working (a fresh key per start broke all of those and left every earlier one
 * valid). Only its hash is in the database, so its text is kept in the data folder, mode 0600.
 * `newKey` revokes the current banner key and issues another (a leaked key). Keys an administrator
 * created for the demo client have no purpose and are never touched.
 */
export async function seedDemoWithBannerKey(db: Database, options: { dataDir: string; newKey?: boolean }): Promise<DemoBannerSeedResult> {
  const tenant = await seedDemoTenant(db);
  const file = bannerKeyFile(options.dataDir);
  const key = await db.transaction(async (tx) => {
    // Every start and seed-demo against this database queues here: one decides, the next reuses.
    await tx.select({ id: apiClients.id }).from(apiClients).where(eq(apiClients.id, CLIENT)).for('update');
    const active = await tx
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.clientId, CLIENT), eq(apiKeys.purpose, BANNER_KEY_PURPOSE), isNull(apiKeys.revokedAt)));
    const stored = options.newKey ? null : readKeptKey(file);
    const kept = stored === null ? undefined : active.find((k) => k.keyHash === hashApiKey(stored));
    if (stored !== null && kept) {
      // A key kept from an older version lacks scopes added since; the banner promises all.
      if (kept.scopes.length !== SCOPES.length || SCOPES.some((scope) => !kept.scopes.includes(scope))) {
        await tx.update(apiKeys).set({ scopes: [...SCOPES] }).where(eq(apiKeys.id, kept.id));
      }
      return { key: stored, key_id: kept.id, status: 'reused' as const };
    }
    if (active.length > 0) await tx.update(apiKeys).set({ revokedAt: new Date() }).where(inArray(apiKeys.id, active.map((k) => k.id)));
    const created = await createKey(tx, { clientId: CLIENT, environment: 'sandbox', scopes: [...SCOPES], purpose: BANNER_KEY_PURPOSE });
    // Written before commit: if writing fails nothing changes; if the commit fails, the next start
    // finds no matching key and replaces it.
    keepKey(file, created.key);
    return { key: created.key, key_id: created.key_id, status: active.length > 0 ? ('replaced' as const) : ('created' as const) };
  });
  return { ...tenant, sandbox_key: key.key, sandbox_key_id: key.key_id, sandbox_key_status: key.status, sandbox_key_file: file };
}

/** The kept key text, or null when there is none usable; a file others could read is tightened first. */
function readKeptKey(file: string): string | null {
  let stat;
  try {
    stat = lstatSync(file);
  } catch {
    return null;
  }
  // A symbolic link or anything but a plain file is not ours to read; it is replaced on write.
  if (!stat.isFile()) return null;
  if ((stat.mode & 0o077) !== 0) chmodSync(file, 0o600);
  const text = readFileSync(file, 'utf8').trim();
  return keyEnvironment(text) === 'sandbox' ? text : null;
}

/** Created 0600 (a umask can only narrow that) under a temporary name and renamed over the old file: never readable by others, never half-written. */
function keepKey(file: string, key: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${key}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
