import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { createTestDatabase } from '../test-database';
import { locateDatabase } from '../resolve';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { takeLease, whenLastHolder } from './server-lease';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

const projectRoot = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * One fresh, migrated database per test run: DATABASE_URL's server when set, the embedded
 * PostgreSQL otherwise. Runs never see each other's rows. Runs of several projects at once
 * (`npx nx affected -t test`) share the embedded server: its owner stops it last (server-lease.ts).
 */
export default async function setup(project: TestProject) {
  const dataDir = process.env.PARTNER_DATA_DIR ?? join(projectRoot, '.data');
  const release = process.env.DATABASE_URL ? () => undefined : takeLease(join(dataDir, 'postgres.leases'));
  const location = await locateDatabase({
    databaseUrl: process.env.DATABASE_URL,
    dataDir,
    embeddedPort: Number(process.env.PARTNER_EMBEDDED_PG_PORT ?? 54329),
  });
  const database = await createTestDatabase(location.url, project.name.replace(/[^a-z0-9]/gi, '').toLowerCase() || 'test');
  project.provide('databaseUrl', database.url);
  return async () => {
    await database.drop();
    release();
    // Only the owner waits: borrowers waiting for each other would never finish.
    if (location.startedHere) await whenLastHolder(join(dataDir, 'postgres.leases'), (line) => console.log(`[${project.name}] ${line}`));
    await location.stop();
  };
}
