import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';

// Provided by libs/db/src/testing/global-setup.ts.
declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * pg-boss keeps its connections in a pg-pool, and a stopping instance stops its database right
 * after the worker's pg-boss has stopped. pg-pool's end() resolved as soon as it had asked its
 * idle connections to close, before they had: PostgreSQL's shutdown then cut them mid-goodbye and
 * the worker logged "terminating connection due to administrator command" (57P01).
 * patches/pg-pool+3.14.0.patch makes end() wait for them (brianc/node-postgres#2328).
 */
describe('pg-pool end()', () => {
  it('resolves only once every connection of the pool has closed', async () => {
    const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 3 });
    const clients: pg.Client[] = [];
    pool.on('connect', (client) => clients.push(client));
    await Promise.all([pool.query('select pg_sleep(0.05)'), pool.query('select pg_sleep(0.05)'), pool.query('select 1')]);
    expect(clients).toHaveLength(3);
    await pool.end();
    const open = clients.filter((client) => !(client as unknown as { connection: { stream: { destroyed: boolean } } }).connection.stream.destroyed);
    expect(open).toHaveLength(0);
  });
});
