-- events becomes a partitioned table (0017-0019), and a foreign key can reference a partitioned
-- table only through a unique key that includes its partition key (created_at): the delivery →
-- event check goes first, on its own. A delivery is written in the transaction that appends its
-- event (webhooks/outbox.ts), and events are never deleted while their deliveries are kept, so the
-- check guarded nothing the outbox does not. The code of this release and of the previous one
-- runs without it (webhooks/delivery-store.ts deferEventCheck: nothing to defer).
-- A catalog change: the exclusive locks on webhook_deliveries and events last as long as the
-- statement, no scan. Their wait stays under the API's own lock_timeout (0.5 s); the runner retries.
-- Both tables are touched by nearly every partner transaction, and the statement needs both at once
-- (webhook_deliveries first, then events, the order the append writes them in): a quiet moment may
-- take many tries (the rolling-upgrade test saw 10 fail in a row under load), each waiting at most
-- 200 ms.
-- lop-migrate: attempts 60
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT IF EXISTS "webhook_deliveries_event_id_events_id_fk";
