import { and, asc, eq, sql } from 'drizzle-orm';
import { catalogItems, preparedStatement, type Database, type Executor } from '@lop/db';
import type { CatalogItem } from './catalog.schemas';

export type CatalogItemRow = typeof catalogItems.$inferSelect;

export async function listActiveItems(db: Database, programId: string): Promise<CatalogItemRow[]> {
  return db
    .select()
    .from(catalogItems)
    .where(and(eq(catalogItems.programId, programId), eq(catalogItems.status, 'active')))
    .orderBy(asc(catalogItems.sortOrder), asc(catalogItems.code));
}

/** The item when it is an active test of the program; null otherwise. */
const activeItem = preparedStatement((db) =>
  db
    .select()
    .from(catalogItems)
    .where(and(eq(catalogItems.programId, sql.placeholder('programId')), eq(catalogItems.id, sql.placeholder('itemId')), eq(catalogItems.status, 'active')))
    .prepare('active_catalog_item'),
);

export async function findActiveItem(db: Executor, programId: string, itemId: string): Promise<CatalogItemRow | null> {
  const [row] = await activeItem(db).execute({ programId, itemId });
  return row ?? null;
}

export function toCatalogItem(row: CatalogItemRow): CatalogItem {
  return {
    item_id: row.id,
    lab_orderable_id: row.labOrderableId,
    lab_test_code: row.labTestCode,
    code: row.code,
    description: row.description,
    external_code: row.externalCode,
    name: row.name,
    kind: row.kind,
    performing_laboratory: row.performingLaboratory,
    specimen_type: row.specimenType,
    container: row.container,
    min_volume_ml: row.minVolumeMl,
  };
}
