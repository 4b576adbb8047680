-- lop-migrate: no-transaction
-- Issue 33: how the re-encryption job and `admin encryption status` find orders per key version
-- without scanning the table (libs/domain/src/security/key-rotation.ts).
-- orders_key_version_idx: rows per labelled version, in id order for keyset batches; also what the
-- foreign key of 0026 probes when a version is retired (`key_version = $1` implies the predicate).
-- orders_unlabelled_protected_idx: the rows written before 0026 (personal data, no label yet): the
-- job's backlog, emptied as it re-encrypts them; no later row enters it (the trigger labels every
-- write).
-- CONCURRENTLY: writes go on; the wait for older transactions gets a long lock_timeout.
SET lock_timeout = '30s';--> statement-breakpoint
SET statement_timeout = '60min';--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "orders_key_version_idx" ON "orders" ("key_version", "id") WHERE "key_version" IS NOT NULL;--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "orders_unlabelled_protected_idx" ON "orders" ("id") WHERE "key_version" IS NULL AND "protected_data" IS NOT NULL;
