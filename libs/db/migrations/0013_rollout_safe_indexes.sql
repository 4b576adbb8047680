-- lop-migrate: no-transaction
-- Indexes for reads that otherwise scan the history, built CONCURRENTLY: partners keep writing
-- while they build. No code of this release needs them (CODE_NEEDS_MIGRATION stays 0012).
SET lock_timeout = '1s';--> statement-breakpoint
SET statement_timeout = '15min';--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "rate_limit_counters_window_idx" ON "rate_limit_counters" USING btree ("window_start");--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "webhook_deliveries_pending_idx" ON "webhook_deliveries" USING btree (coalesce("next_attempt_at", "created_at")) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "webhook_deliveries_replay_of_idx" ON "webhook_deliveries" USING btree ("replay_of") WHERE replay_of is not null;
