import { randomUUID } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
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
});
