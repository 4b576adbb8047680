import { inject } from 'vitest';

// Provided by libs/db/src/testing/global-setup.ts, which this project's type check does not include.
declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/** The database of this test run (a fresh migrated one, see libs/db/src/testing/global-setup.ts). */
export const testDatabaseUrl = (): string => inject('databaseUrl');
