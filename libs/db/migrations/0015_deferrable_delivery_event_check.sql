-- A transaction that appends events writes their webhook deliveries first and numbers the events
-- last (libs/domain/src/events/append.ts), so the stream's counter row is held only for the
-- numbering and the commit. Those deliveries reference events inserted later in the same
-- transaction: the check that a delivery's event exists may wait for commit. INITIALLY IMMEDIATE
-- keeps every other writer's check at its statement; the append asks for DEFERRED itself.
-- A catalog change on one table (0014 changed events: one table per migration, so neither holds a
-- lock while it waits for another). Its wait stays under the API's lock_timeout (0.5 s).
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
-- The runner applies this file in one transaction, and running it again changes nothing.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "webhook_deliveries" ALTER CONSTRAINT "webhook_deliveries_event_id_events_id_fk" DEFERRABLE INITIALLY IMMEDIATE;
