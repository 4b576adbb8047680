-- lop-migrate: no-transaction
-- Issue 32: the tables pruned by age become range-partitioned tables, so retention drops a whole
-- partition instead of deleting rows (docs/operations.md § Retention). This file prepares the
-- switch without holding any table for longer than an instant; 0022-0024 then switch one table
-- each, in one short transaction. Nothing of the previous release changes: its statements read
-- and write the same tables, columns and defaults before and after.
--
-- Per table, today's table becomes the first partition of its partitioned twin, FROM (MINVALUE)
-- TO (B), with B the start of the first period after now + 7 days (computed here, at migration
-- time). Until the switch, its rows keep going into today's table, so B leaves a week for it.
-- 1. CHECK (key < B) NOT VALID, then VALIDATE (a scan that blocks no writer): ATTACH PARTITION
--    then knows every row fits, and scans nothing under its lock.
-- 2. Every unique index the partitioned twin has (each includes the partition key), built
--    CONCURRENTLY on today's table, so that ATTACH adopts it instead of building one under lock;
--    the primary key's twin becomes today's table's primary key (USING INDEX: no scan; the key
--    columns are NOT NULL already), replacing its key on id alone: ATTACH adopts a partition's
--    primary key for the parent's, and PostgreSQL 18 (the embedded server of `npm start` and
--    `npm test`) refuses a partition with a second one ("multiple primary keys"), where 15 took a
--    unique constraint. Nothing references that key since 0020 dropped the attempts' foreign key.
-- 3. The partitioned twin: the same columns in the same order with the same defaults (LIKE …
--    INCLUDING DEFAULTS: the request log's id keeps drawing from the same sequence), the same
--    indexes (copied from today's table, so ATTACH adopts them), no foreign key (below), and its
--    first partitions from B
--    (libs/db/src/partitions.ts names: <table>_pYYYY_MM_DD, a week's by its Monday). They reach
--    well ahead: the previous release makes none (a rollback runs it alone), this release's
--    maintenance job keeps them ahead from then on. No DEFAULT partition: it would forbid
--    DETACH … CONCURRENTLY and make every new partition scan it.
-- Periods: deliveries and attempts weekly (retention 30 days by default: 5-6 live partitions,
-- each probed by an update by id), the request log daily (7 days).
-- The deliveries' foreign key to webhook_subscriptions stays on the legacy partition only (the
-- one to events went in 0016); the partitioned table has none. ATTACH would merge the legacy
-- table's key into the parent's, which replaces its triggers on webhook_subscriptions under that
-- table's exclusive lock, a table every order create reads: under the rolling-upgrade test's
-- traffic the switch could not get it in ten tries. (A key on the parent would also be cloned into
-- every partition under the same name.) Subscriptions are never deleted (disabled instead), and
-- every delivery is written from a subscription row its own statement or transaction read.
-- Each statement runs on its own and can run again after a failure part way.
-- Two lock limits: 200 ms where a statement takes a table's exclusive lock (ADD CONSTRAINT … NOT
-- VALID, ADD CONSTRAINT … USING INDEX, the twin's key to webhook_subscriptions), under the API's
-- own 0.5 s; 30 s for VALIDATE and CREATE INDEX CONCURRENTLY, whose SHARE UPDATE EXCLUSIVE lets
-- every read and write through but which wait for every transaction older than themselves, as
-- 0013 did (with 200 ms they gave up ten times in a row under the rolling-upgrade test's traffic).
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '30min';--> statement-breakpoint
CREATE OR REPLACE FUNCTION pg_temp.lop_partition_bound(tbl text, key text, period text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  bound timestamptz := (date_trunc(period, (now() + interval '7 days') AT TIME ZONE 'UTC') + ('1 ' || period)::interval) AT TIME ZONE 'UTC';
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = tbl::regclass AND conname = tbl || '_partition_bound') THEN
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I < %L) NOT VALID', tbl, tbl || '_partition_bound', key, bound);
  END IF;
END $$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION pg_temp.lop_partition_twin(tbl text, key text, period text, ahead int, replaced text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  twin text := tbl || '_partitioned';
  bound timestamptz;
  ix record;
  i int;
BEGIN
  SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''')::timestamptz INTO STRICT bound
  FROM pg_constraint WHERE conrelid = tbl::regclass AND conname = tbl || '_partition_bound';
  IF to_regclass(twin) IS NOT NULL THEN RETURN; END IF;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS) PARTITION BY RANGE (%I)', twin, tbl, key);
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (id, %I)', twin, twin || '_pkey', key);
  -- Every other index as it is on today's table (ATTACH matches them by definition), except the
  -- unique ones, replaced by their twin with the partition key, and the ones step 2 built.
  FOR ix IN
    SELECT c.relname AS name, pg_get_indexdef(x.indexrelid) AS def
    FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
    WHERE x.indrelid = tbl::regclass AND NOT x.indisprimary AND NOT (c.relname = ANY (replaced)) AND c.relname NOT LIKE tbl || '_legacy_%'
  LOOP
    EXECUTE regexp_replace(
      replace(ix.def, format(' ON public.%I ', tbl), format(' ON public.%I ', twin)),
      '^CREATE (UNIQUE )?INDEX ' || ix.name, 'CREATE \1INDEX ' || twin || substr(ix.name, length(tbl) + 1));
  END LOOP;
  FOR ix IN
    SELECT c.relname AS name, pg_get_indexdef(x.indexrelid) AS def
    FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
    WHERE x.indrelid = tbl::regclass AND x.indisunique AND NOT x.indisprimary AND c.relname LIKE tbl || '_legacy_%' AND c.relname <> tbl || '_legacy_id_key'
  LOOP
    EXECUTE regexp_replace(
      replace(ix.def, format(' ON public.%I ', tbl), format(' ON public.%I ', twin)),
      '^CREATE UNIQUE INDEX ' || ix.name, 'CREATE UNIQUE INDEX ' || twin || substr(ix.name, length(tbl || '_legacy') + 1));
  END LOOP;
  FOR i IN 0 .. ahead - 1 LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
      tbl || '_p' || to_char(bound + (i || ' ' || period)::interval, 'YYYY_MM_DD'), twin,
      bound + (i || ' ' || period)::interval, bound + ((i + 1) || ' ' || period)::interval);
  END LOOP;
END $$;--> statement-breakpoint
SET TIME ZONE 'UTC';--> statement-breakpoint
-- webhook_deliveries, by created_at, weekly.
SELECT pg_temp.lop_partition_bound('webhook_deliveries', 'created_at', 'week');--> statement-breakpoint
SET lock_timeout = '30s';--> statement-breakpoint
-- Validating a constraint that is already valid changes nothing: a rerun is harmless.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "webhook_deliveries" VALIDATE CONSTRAINT "webhook_deliveries_partition_bound";--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "webhook_deliveries_legacy_id_key" ON "webhook_deliveries" USING btree ("id", "created_at");--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "webhook_deliveries_legacy_event_subscription_idx" ON "webhook_deliveries" USING btree ("event_id", "subscription_id", "created_at") WHERE kind = 'event';--> statement-breakpoint
SET lock_timeout = '200ms';--> statement-breakpoint
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'webhook_deliveries_legacy_id_key') THEN
    ALTER TABLE "webhook_deliveries" DROP CONSTRAINT IF EXISTS "webhook_deliveries_pkey", ADD CONSTRAINT "webhook_deliveries_legacy_id_key" PRIMARY KEY USING INDEX "webhook_deliveries_legacy_id_key";
  END IF;
END $$;--> statement-breakpoint
SELECT pg_temp.lop_partition_twin('webhook_deliveries', 'created_at', 'week', 6, ARRAY['webhook_deliveries_event_subscription_idx']);--> statement-breakpoint
-- webhook_delivery_attempts, by started_at, weekly.
SELECT pg_temp.lop_partition_bound('webhook_delivery_attempts', 'started_at', 'week');--> statement-breakpoint
SET lock_timeout = '30s';--> statement-breakpoint
-- Validating a constraint that is already valid changes nothing: a rerun is harmless.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "webhook_delivery_attempts" VALIDATE CONSTRAINT "webhook_delivery_attempts_partition_bound";--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "webhook_delivery_attempts_legacy_id_key" ON "webhook_delivery_attempts" USING btree ("id", "started_at");--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "webhook_delivery_attempts_legacy_number_idx" ON "webhook_delivery_attempts" USING btree ("delivery_id", "attempt_number", "started_at");--> statement-breakpoint
SET lock_timeout = '200ms';--> statement-breakpoint
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'webhook_delivery_attempts_legacy_id_key') THEN
    ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT IF EXISTS "webhook_delivery_attempts_pkey", ADD CONSTRAINT "webhook_delivery_attempts_legacy_id_key" PRIMARY KEY USING INDEX "webhook_delivery_attempts_legacy_id_key";
  END IF;
END $$;--> statement-breakpoint
SELECT pg_temp.lop_partition_twin('webhook_delivery_attempts', 'started_at', 'week', 6, ARRAY['webhook_delivery_attempts_number_idx']);--> statement-breakpoint
-- sandbox_request_log, by occurred_at, daily.
SELECT pg_temp.lop_partition_bound('sandbox_request_log', 'occurred_at', 'day');--> statement-breakpoint
SET lock_timeout = '30s';--> statement-breakpoint
-- Validating a constraint that is already valid changes nothing: a rerun is harmless.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "sandbox_request_log" VALIDATE CONSTRAINT "sandbox_request_log_partition_bound";--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "sandbox_request_log_legacy_id_key" ON "sandbox_request_log" USING btree ("id", "occurred_at");--> statement-breakpoint
SET lock_timeout = '200ms';--> statement-breakpoint
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'sandbox_request_log_legacy_id_key') THEN
    ALTER TABLE "sandbox_request_log" DROP CONSTRAINT IF EXISTS "sandbox_request_log_pkey", ADD CONSTRAINT "sandbox_request_log_legacy_id_key" PRIMARY KEY USING INDEX "sandbox_request_log_legacy_id_key";
  END IF;
END $$;--> statement-breakpoint
SELECT pg_temp.lop_partition_twin('sandbox_request_log', 'occurred_at', 'day', 14, ARRAY[]::text[]);
