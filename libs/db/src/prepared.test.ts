import { randomUUID } from 'node:crypto';
import { DrizzleQueryError, eq, sql } from 'drizzle-orm';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase } from './client';
import { preparedStatement } from './prepared';
import { laboratories } from './schema';

const connection = connectDatabase(inject('databaseUrl'), { max: 2 });
afterAll(() => connection.close());

const laboratoryNamed = preparedStatement((db) =>
  db
    .select({ id: laboratories.id, displayName: laboratories.displayName })
    .from(laboratories)
    .where(eq(laboratories.displayName, sql.placeholder('name')))
    .prepare('test_laboratory_named'),
);

const insertLaboratory = (db: typeof connection.db, name: string) =>
  db.insert(laboratories).values({ displayName: name, legalName: name, operatingName: name }).returning({ id: laboratories.id });

describe('preparedStatement', () => {
  it('runs on the pool with new values each call', async () => {
    const name = `prepared-${randomUUID()}`;
    const [{ id }] = await insertLaboratory(connection.db, name);
    expect(await laboratoryNamed(connection.db).execute({ name })).toEqual([{ id, displayName: name }]);
    expect(await laboratoryNamed(connection.db).execute({ name: `${name}-other` })).toEqual([]);
  });

  it('runs inside a transaction on its connection: sees its uncommitted rows, and nothing after a rollback', async () => {
    const name = `prepared-tx-${randomUUID()}`;
    const rollback = new Error('roll back');
    await expect(
      connection.db.transaction(async (tx) => {
        const [{ id }] = await insertLaboratory(tx as unknown as typeof connection.db, name);
        expect(await laboratoryNamed(tx).execute({ name })).toEqual([{ id, displayName: name }]);
        // Not visible outside the transaction until it commits.
        expect(await laboratoryNamed(connection.db).execute({ name })).toEqual([]);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await laboratoryNamed(connection.db).execute({ name })).toEqual([]);
  });

  it('a failed statement is drizzle\'s "Failed query" error with the driver\'s error as its cause, as drizzle\'s own execute throws it', async () => {
    const failing = preparedStatement((db) =>
      db
        .insert(laboratories)
        .values({ id: sql.placeholder('id'), displayName: 'x', legalName: 'x', operatingName: 'x' })
        .prepare('test_laboratory_bad_id'),
    );
    const error = await failing(connection.db)
      .execute({ id: 'not-a-uuid' })
      .then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(DrizzleQueryError);
    expect((error as Error).message).toMatch(/^Failed query: insert into "laboratories"/);
    expect((error as { cause?: { code?: string } }).cause?.code).toBe('22P02');
  });

  it('maps selected columns as drizzle does (a placeholder encoded by its column, names from the selection)', async () => {
    const name = `prepared-map-${randomUUID()}`;
    const [{ id }] = await insertLaboratory(connection.db, name);
    const byId = preparedStatement((db) =>
      db.select({ lab: { id: laboratories.id, name: laboratories.displayName } }).from(laboratories).where(eq(laboratories.id, sql.placeholder('id'))).prepare('test_laboratory_by_id'),
    );
    expect(await byId(connection.db).execute({ id })).toEqual([{ lab: { id, name } }]);
  });
});
