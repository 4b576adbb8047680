-- The delivery state and the attempt outcome become enums, converted in place (USING). The two
-- partial indexes compare state with a text literal: they are dropped and made again so their
-- predicates compare enum values, and the text default goes before the conversion and comes back as an enum.
CREATE TYPE "public"."webhook_attempt_outcome" AS ENUM('sending', 'delivered', 'retry', 'dead_lettered', 'failed');--> statement-breakpoint
CREATE TYPE "public"."webhook_delivery_state" AS ENUM('pending', 'delivered', 'dead_lettered', 'cancelled', 'failed');--> statement-breakpoint
DROP INDEX "webhook_deliveries_dead_idx";--> statement-breakpoint
DROP INDEX "webhook_deliveries_completed_idx";--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ALTER COLUMN "state" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ALTER COLUMN "state" SET DATA TYPE "public"."webhook_delivery_state" USING "state"::"public"."webhook_delivery_state";--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ALTER COLUMN "state" SET DEFAULT 'pending'::"public"."webhook_delivery_state";--> statement-breakpoint
CREATE INDEX "webhook_deliveries_dead_idx" ON "webhook_deliveries" USING btree ("created_at") WHERE state = 'dead_lettered';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_completed_idx" ON "webhook_deliveries" USING btree ("completed_at") WHERE state <> 'pending';--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ALTER COLUMN "outcome" SET DATA TYPE "public"."webhook_attempt_outcome" USING "outcome"::"public"."webhook_attempt_outcome";
