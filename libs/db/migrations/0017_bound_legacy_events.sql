-- lop-migrate: no-transaction
-- Step 1 of 3 of partitioning events online (docs/migrations.md § A big table to partitioned).
-- Today's single table becomes the partitioned table's first partition (0019), attached without a
-- scan under lock only if a validated CHECK already proves every row lies in its range. The range:
-- from the first day of the month of the oldest event (of the current month on an empty table) to
-- the upper bound B, the first day of the month after the one 7 days from now: the rows this
-- release and the previous one insert meanwhile (created_at = now()) stay inside it until 0019
-- swaps the tables (in the same `npm run migrate`), with at least 7 days to spare should the run
-- stop half way. From B on, rows go to monthly partitions (0018).
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '30min';--> statement-breakpoint
-- The oldest event, read with no lock but a reader's: kept in the session (the runner's one
-- connection) for the next statement, which recomputes it should the connection have changed.
SELECT set_config('lop.events_lower', coalesce(date_trunc('month', min("created_at"), 'UTC'), date_trunc('month', now(), 'UTC'))::text, false) FROM "events";--> statement-breakpoint
-- NOT VALID: a catalog change under a moment's exclusive lock; rows inserted from now on are checked.
DO $$
DECLARE
  lower_bound timestamptz;
  upper_bound timestamptz := (date_trunc('month', (now() AT TIME ZONE 'UTC') + interval '7 days') + interval '1 month') AT TIME ZONE 'UTC';
BEGIN
  IF EXISTS (SELECT FROM pg_constraint WHERE conrelid = 'events'::regclass AND conname = 'events_legacy_range') THEN
    RETURN;
  END IF;
  lower_bound := coalesce(
    nullif(current_setting('lop.events_lower', true), '')::timestamptz,
    (SELECT coalesce(date_trunc('month', min("created_at"), 'UTC'), date_trunc('month', now(), 'UTC')) FROM "events"));
  EXECUTE format('ALTER TABLE "events" ADD CONSTRAINT "events_legacy_range" CHECK ("created_at" >= %L AND "created_at" < %L) NOT VALID', lower_bound, upper_bound);
END $$;--> statement-breakpoint
-- Scans the table under SHARE UPDATE EXCLUSIVE: inserts and reads go on. Validating a validated
-- constraint does nothing, so a rerun is harmless.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "events" VALIDATE CONSTRAINT "events_legacy_range";
