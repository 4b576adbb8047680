import { eq } from 'drizzle-orm';
import { laboratories, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { notFound } from '../http/errors';
import type { LaboratoryProfile } from './laboratory.schemas';

export async function getLaboratoryProfile(db: Database, caller: Caller): Promise<LaboratoryProfile> {
  const [lab] = await db.select().from(laboratories).where(eq(laboratories.id, caller.laboratoryId));
  if (!lab) throw notFound('laboratory');
  return {
    laboratory_id: lab.id,
    display_name: lab.displayName,
    legal_name: lab.legalName,
    operating_name: lab.operatingName,
    environment: caller.environment,
    certifications: { state: 'not_modeled', identifiers: lab.certificationIdentifiers },
    jurisdictions: lab.jurisdictions,
    service_geography: lab.serviceGeography,
    collection_methods: lab.collectionMethods,
    collection_modes: lab.collectionModes,
    specimen_categories: lab.specimenCategories,
    coding_systems_supplied: lab.codingSystemsSupplied,
  };
}
