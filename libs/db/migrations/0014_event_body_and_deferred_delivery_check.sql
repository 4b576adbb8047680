-- The stream's write path (libs/domain/src/events/append.ts), two catalog changes, no scan or rewrite:
-- 1. events.body: each event as partners receive it, written once at append, so GET /v1/events and
--    webhook bodies send those bytes instead of validating and serialising every event again.
--    Nullable: rows of earlier releases (and of the previous release during a rollout) have none.
-- 2. A transaction that appends events writes their webhook deliveries first and numbers the
--    events last, so the stream's counter row is held only for the numbering and the commit.
--    Those deliveries reference events inserted later in the same transaction, so the check that
--    a delivery's event exists may wait for commit. INITIALLY IMMEDIATE keeps every other writer's
--    check at its statement; the append asks for DEFERRED itself.
-- Each statement holds its table's exclusive lock only while the catalog changes.
SET lock_timeout = '1s';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "body" text;--> statement-breakpoint
-- The runner applies this file in one transaction, and running it again changes nothing.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "webhook_deliveries" ALTER CONSTRAINT "webhook_deliveries_event_id_events_id_fk" DEFERRABLE INITIALLY IMMEDIATE;
