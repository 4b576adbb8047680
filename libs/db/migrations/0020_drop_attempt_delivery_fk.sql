-- webhook_deliveries becomes a partitioned table (0022), whose unique keys include its partition
-- key (created_at): a foreign key naming webhook_deliveries(id) alone cannot exist any more. The
-- attempts are written only through their delivery's claim (delivery-store.ts), and retention
-- drops attempts with or before their deliveries (retention.ts), so the key guards nothing the
-- code does not already. Both releases run the same statements with or without it: the previous
-- release deletes a delivery's attempts in the statement that deletes the delivery.
-- Dropping it takes both tables' exclusive locks for an instant: parent first (docs/migrations.md),
-- each wait shorter than the API's own lock_timeout; the runner retries.
-- Both tables are touched by nearly every delivery: a quiet moment may take many tries, each
-- waiting at most 200 ms (the rolling-upgrade test saw ten fail in a row on a loaded machine).
-- lop-migrate: attempts 60
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
LOCK TABLE "webhook_deliveries", "webhook_delivery_attempts" IN ACCESS EXCLUSIVE MODE;--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT IF EXISTS "webhook_delivery_attempts_delivery_id_webhook_deliveries_id_fk";
