import { pgEnum, timestamp, uuid } from 'drizzle-orm/pg-core';

/** Every tenant-owned row lives in exactly one environment; a sandbox key never reaches production rows. */
export const environmentEnum = pgEnum('environment', ['sandbox', 'production']);
export type Environment = (typeof environmentEnum.enumValues)[number];

export const id = () => uuid('id').primaryKey().defaultRandom();
export const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();
