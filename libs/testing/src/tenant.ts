import { randomBytes, randomUUID } from 'node:crypto';
import { type Scope, SCOPES } from '@lop/contract';
import { eq } from 'drizzle-orm';
import {
  aoeQuestions,
  apiClients,
  catalogItems,
  laboratories,
  locations,
  orders,
  programs,
  requirementProfiles,
  type Database,
  type Environment,
} from '@lop/db';
import { createClient, createKey, grantPrograms, revokeKey, seedDemo, type DemoSeedResult } from '@lop/domain';

export type ProgramRow = typeof programs.$inferSelect;
export type ItemRow = typeof catalogItems.$inferSelect;
export type LocationRow = typeof locations.$inferSelect;
export type LaboratoryRow = typeof laboratories.$inferSelect;
export type ProfileRow = typeof requirementProfiles.$inferSelect;
export type OrderRow = typeof orders.$inferSelect;

export interface KeyOptions {
  scopes?: readonly Scope[];
  /** A key whose expiry is already past. */
  expired?: boolean;
  expiresAt?: Date;
  revoked?: boolean;
}

/** Unique text per call, so files running in parallel never collide on names or codes. */
export const unique = (label: string) => `${label}-${randomBytes(5).toString('hex')}`;

/**
 * Builds tenant rows through the control-plane functions where they exist, and plain drizzle
 * inserts for what only a laboratory administrator's data load would create.
 */
export function fixtures(db: Database) {
  const f = {
    /** The demo tenant. Its rows have fixed ids shared by every file: read them, never change them. */
    async demo(): Promise<DemoSeedResult & { key: string; program(name: string): string }> {
      const seed = await seedDemo(db);
      return {
        ...seed,
        key: seed.sandbox_key,
        program: (name) => {
          const found = seed.programs.find((p) => p.name === name);
          if (!found) throw new Error(`no demo program named ${name}`);
          return found.program_id;
        },
      };
    },

    async laboratory(overrides: Partial<typeof laboratories.$inferInsert> = {}): Promise<LaboratoryRow> {
      const name = unique('Test Laboratory');
      const [row] = await db
        .insert(laboratories)
        .values({
          displayName: name,
          legalName: `${name}, Inc.`,
          operatingName: `${name} Labs`,
          certificationIdentifiers: ['CLIA 99D9999999'],
          jurisdictions: ['US'],
          serviceGeography: ['US-CA', 'US-NY'],
          collectionMethods: ['in_person_draw', 'at_home_kit'],
          collectionModes: ['walk_in'],
          specimenCategories: ['serum'],
          codingSystemsSupplied: ['lab_local'],
          ...overrides,
        })
        .returning();
      return row;
    },

    async client(laboratoryId: string, name = unique('Test Client')) {
      return createClient(db, laboratoryId, name);
    },

    async disableClient(clientId: string): Promise<void> {
      await db.update(apiClients).set({ status: 'disabled' }).where(eq(apiClients.id, clientId));
    },

    async program(laboratoryId: string, overrides: Partial<typeof programs.$inferInsert> & { environment?: Environment } = {}): Promise<ProgramRow> {
      const [row] = await db
        .insert(programs)
        .values({
          laboratoryId,
          environment: 'sandbox',
          name: unique('Program'),
          status: 'active',
          currency: 'USD',
          jurisdiction: 'US',
          serviceGeography: ['US-CA'],
          collectionMethods: ['in_person_draw', 'at_home_kit'],
          ...overrides,
        })
        .returning();
      return row;
    },

    async item(programId: string, overrides: Partial<typeof catalogItems.$inferInsert> = {}): Promise<ItemRow> {
      const code = unique('T').toUpperCase();
      const [row] = await db
        .insert(catalogItems)
        .values({
          programId,
          labOrderableId: randomUUID(),
          labTestCode: code,
          code,
          description: `Test ${code} (serum)`,
          externalCode: '80061',
          name: `Test ${code}`,
          kind: 'test',
          performingLaboratory: 'Test Laboratory, Central Lab',
          specimenType: 'serum',
          container: 'Gold-top serum separator tube',
          minVolumeMl: 1.5,
          collectionMethods: [],
          ...overrides,
        })
        .returning();
      return row;
    },

    async location(laboratoryId: string, overrides: Partial<typeof locations.$inferInsert> = {}): Promise<LocationRow> {
      const [row] = await db
        .insert(locations)
        .values({
          laboratoryId,
          environment: 'sandbox',
          locationCode: unique('LOC'),
          name: unique('Patient Service Center'),
          region: 'US-CA',
          city: 'Los Angeles',
          country: 'US',
          timezone: 'America/Los_Angeles',
          collectionMethods: ['in_person_draw'],
          serviceStatus: 'active',
          streetAddress: '742 Evergreen Terrace',
          telephone: '+1-555-0199',
          operationalNotes: 'Courier pickup 16:00; freezer in room B.',
          ...overrides,
        })
        .returning();
      return row;
    },

    /** Grants the program to the client in the program's own environment (control plane). */
    async grant(clientId: string, program: Pick<ProgramRow, 'id' | 'environment'>): Promise<void> {
      await grantPrograms(db, { clientId, environment: program.environment, programId: program.id });
    },

    async key(clientId: string, environment: Environment, options: KeyOptions = {}): Promise<string> {
      const expiresAt = options.expired ? new Date(Date.now() - 60_000) : options.expiresAt;
      const created = await createKey(db, { clientId, environment, scopes: [...(options.scopes ?? SCOPES)], expiresAt });
      if (options.revoked) await revokeKey(db, created.key_id);
      return created.key;
    },

    /**
     * An order row as a partner's create leaves it (`received`, unless told otherwise), written
     * directly: for tests of what the laboratory does with an order afterwards.
     */
    async order(clientId: string, program: Pick<ProgramRow, 'id' | 'laboratoryId' | 'environment'>, item: Pick<ItemRow, 'id'>, overrides: Partial<typeof orders.$inferInsert> = {}): Promise<OrderRow> {
      const [row] = await db
        .insert(orders)
        .values({
          laboratoryId: program.laboratoryId,
          clientId,
          environment: program.environment,
          externalOrderId: unique('ext'),
          programId: program.id,
          itemId: item.id,
          externalSubjectId: unique('subject'),
          collection: 'in_person_draw',
          synthetic: program.environment === 'sandbox',
          lifecycleDetail: 'received',
          ...overrides,
        })
        .returning();
      return row;
    },

    async requirementProfile(
      programId: string,
      overrides: Partial<typeof requirementProfiles.$inferInsert> = {},
      questions: Omit<typeof aoeQuestions.$inferInsert, 'requirementProfileId'>[] = [],
    ): Promise<ProfileRow> {
      const [row] = await db
        .insert(requirementProfiles)
        .values({ programId, jurisdiction: 'US', ...overrides })
        .returning();
      if (questions.length > 0) await db.insert(aoeQuestions).values(questions.map((q) => ({ ...q, requirementProfileId: row.id })));
      return row;
    },
  };
  return f;
}

export type Fixtures = ReturnType<typeof fixtures>;

export interface Tenant {
  laboratory: LaboratoryRow;
  clientId: string;
  /** An active sandbox program granted to the client, serving `region`, with one item. */
  sandbox: { program: ProgramRow; item: ItemRow };
  /** The same in production. */
  production: { program: ProgramRow; item: ItemRow };
  region: string;
  /** A key of this tenant's client: all scopes, sandbox, unless told otherwise. */
  key(options?: KeyOptions & { environment?: Environment }): Promise<string>;
}

/**
 * A laboratory with one API client, a granted active program with one test in each environment,
 * and an active collection location in the program's region in each environment.
 */
export async function buildTenant(f: Fixtures, options: { laboratory?: LaboratoryRow; region?: string } = {}): Promise<Tenant> {
  const region = options.region ?? 'US-CA';
  const lab = options.laboratory ?? (await f.laboratory());
  const client = await f.client(lab.id);
  const build = async (environment: Environment) => {
    const program = await f.program(lab.id, { environment, serviceGeography: [region] });
    const item = await f.item(program.id);
    await f.grant(client.client_id, program);
    await f.location(lab.id, { environment, region });
    return { program, item };
  };
  const sandbox = await build('sandbox');
  const production = await build('production');
  return {
    laboratory: lab,
    clientId: client.client_id,
    sandbox,
    production,
    region,
    key: ({ environment = 'sandbox', ...keyOptions } = {}) => f.key(client.client_id, environment, keyOptions),
  };
}
