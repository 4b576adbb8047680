import { and, asc, eq, inArray } from 'drizzle-orm';
import { locations, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { listGrantedPrograms } from '../programs/programs';
import type { Location } from './locations.schemas';

/** Regions served by the caller's granted, active programs. */
export async function servedRegions(db: Database, caller: Caller): Promise<string[]> {
  const programs = await listGrantedPrograms(db, caller);
  return [...new Set(programs.filter((p) => p.status === 'active').flatMap((p) => p.serviceGeography))];
}

/** Spec rule: only active locations in the service geography of the key's granted active programs, in its environment. */
export async function listServiceableLocations(db: Database, caller: Caller, regions?: string[]): Promise<Location[]> {
  const served = regions ?? (await servedRegions(db, caller));
  if (served.length === 0) return [];
  const rows = await db
    .select({
      id: locations.id,
      locationCode: locations.locationCode,
      name: locations.name,
      region: locations.region,
      city: locations.city,
      country: locations.country,
      timezone: locations.timezone,
      collectionMethods: locations.collectionMethods,
      appointmentRequired: locations.appointmentRequired,
      walkInAllowed: locations.walkInAllowed,
    })
    .from(locations)
    .where(
      and(
        eq(locations.laboratoryId, caller.laboratoryId),
        eq(locations.environment, caller.environment),
        eq(locations.serviceStatus, 'active'),
        inArray(locations.region, served),
      ),
    )
    .orderBy(asc(locations.country), asc(locations.region), asc(locations.locationCode));
  // Only public fields are selected: address, telephone and operational notes never leave the database.
  return rows.map((r) => ({
    location_id: r.id,
    location_code: r.locationCode,
    name: r.name,
    region: r.region,
    city: r.city,
    country: r.country,
    timezone: r.timezone,
    collection_methods: r.collectionMethods,
    appointment_required: r.appointmentRequired,
    walk_in_allowed: r.walkInAllowed,
    service_status: 'active' as const,
  }));
}
