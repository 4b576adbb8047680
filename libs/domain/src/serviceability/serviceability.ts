import type { Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { findActiveItem } from '../catalog/catalog';
import { PartnerError } from '../http/errors';
import { listServiceableLocations } from '../locations/locations';
import { getGrantedProgram } from '../programs/programs';
import { resolveRequirements } from '../requirements/requirements';
import type { Serviceability } from './serviceability.schemas';

/** Collection methods performed at a collection location (the others come to the subject). */
export const SITE_COLLECTION_METHODS = ['in_person_draw', 'site_collection'];

export interface ServiceabilityQuery {
  program_id: string;
  item_id: string;
  region?: string;
  collection?: string;
}

/**
 * Whether the laboratory can fulfil the test. Unknown and ungranted programs give the same
 * reason, so the answer reveals nothing about other tenants.
 */
export async function checkServiceability(db: Database, caller: Caller, query: ServiceabilityQuery): Promise<Serviceability> {
  const program = await getGrantedProgram(db, caller, query.program_id).catch((error: unknown) => {
    if (error instanceof PartnerError && error.errorCode === 'not_found') return null;
    throw error;
  });
  if (!program) return { serviceable: false, reasons: ['program_not_available'] };

  const reasons: Serviceability['reasons'] = [];
  if (program.status !== 'active') reasons.push('program_inactive');
  const item = await findActiveItem(db, program.id, query.item_id);
  if (!item) {
    reasons.push('item_not_available');
    return { serviceable: false, reasons };
  }

  const { profile } = await resolveRequirements(db, caller, program, item, query.region);
  if (query.region !== undefined && !profile.collection.regions.includes(query.region)) reasons.push('region_not_served');
  if (query.collection !== undefined && !profile.collection.methods.includes(query.collection)) reasons.push('collection_method_not_supported');

  if (query.region !== undefined && query.collection !== undefined && SITE_COLLECTION_METHODS.includes(query.collection) && !reasons.includes('region_not_served')) {
    const sites = await listServiceableLocations(db, caller, [query.region]);
    if (!sites.some((site) => site.collection_methods.includes(query.collection!))) reasons.push('no_active_location_in_region');
  }
  return { serviceable: reasons.length === 0, reasons };
}
