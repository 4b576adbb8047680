-- A transaction that appends events writes their webhook deliveries first and numbers the events
-- last (libs/domain/src/events/append.ts), so the stream's counter row is held only for the
-- numbering and the commit. Those deliveries reference events inserted later in the same
-- transaction: the check that a delivery's event exists may wait for commit. INITIALLY IMMEDIATE
-- keeps every other writer's check at its statement; the append asks for DEFERRED itself.
-- A catalog change only: the exclusive lock lasts as long as the statement, no scan.
SET lock_timeout = '1s';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
-- The runner applies this file in one transaction, and running it again changes nothing.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "webhook_deliveries" ALTER CONSTRAINT "webhook_deliveries_event_id_events_id_fk" DEFERRABLE INITIALLY IMMEDIATE;
