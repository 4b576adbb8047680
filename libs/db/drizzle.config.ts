import { defineConfig } from 'drizzle-kit';

// Only used by `npm run db:generate`; migrations are committed and applied at start.
export default defineConfig({
  dialect: 'postgresql',
  schema: './libs/db/src/schema/index.ts',
  out: './libs/db/migrations',
});
