import { randomUUID } from 'node:crypto';
import { drizzle } from 'drizzle-orm/postgres-js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { notifyAfterCommit } from './after-commit';
import { connectDatabase } from './client';

const connection = connectDatabase(inject('databaseUrl'), { max: 3 });
const listener = connectDatabase(inject('databaseUrl'), { max: 1 });
const channel = `after_commit_${randomUUID().replaceAll('-', '')}`;
const heard: { payload: string; at: number }[] = [];
afterAll(async () => {
  await connection.close();
  await listener.close();
});
beforeAll(async () => {
  await listener.sql.listen(channel, (payload) => heard.push({ payload, at: Date.now() }));
});

const heardFor = async (payload: string, withinMs = 1_000) => {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline && !heard.some((h) => h.payload === payload)) await new Promise((resolve) => setTimeout(resolve, 20));
  return heard.filter((h) => h.payload === payload);
};

describe('notifyAfterCommit', () => {
  it('sends once the transaction has committed, once per payload however often asked (a savepoint included)', async () => {
    const payload = randomUUID();
    let committedAt = 0;
    await connection.db.transaction(async (tx) => {
      await notifyAfterCommit(tx, channel, payload);
      await tx.transaction(async (savepoint) => notifyAfterCommit(savepoint, channel, payload));
      // Nothing before the commit.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(heard.filter((h) => h.payload === payload)).toEqual([]);
      committedAt = Date.now();
    });
    const got = await heardFor(payload);
    expect(got).toHaveLength(1);
    expect(got[0].at).toBeGreaterThanOrEqual(committedAt);
  });

  it('sends nothing when the transaction rolls back', async () => {
    const payload = randomUUID();
    await expect(
      connection.db.transaction(async (tx) => {
        await notifyAfterCommit(tx, channel, payload);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    // A later commit's notification arrives: the rolled-back one would have come before it.
    const later = randomUUID();
    await connection.db.transaction(async (tx) => notifyAfterCommit(tx, channel, later));
    expect(await heardFor(later)).toHaveLength(1);
    expect(heard.filter((h) => h.payload === payload)).toEqual([]);
  });

  it('in a transaction of a plain drizzle client (not connectDatabase), notifies inside it: delivered at its commit all the same', async () => {
    const plain = drizzle(connection.sql);
    const payload = randomUUID();
    await plain.transaction(async (tx) => notifyAfterCommit(tx, channel, payload));
    expect(await heardFor(payload)).toHaveLength(1);
  });
});
