-- events.body: each event as partners receive it, written once at append
-- (libs/domain/src/events/append.ts), so GET /v1/events and webhook bodies send those bytes instead
-- of validating and serialising every event again. Nullable: rows of earlier releases (and of the
-- previous release during a rollout) have none and are rendered from their columns.
-- A catalog change: the exclusive lock lasts as long as the statement, no scan, no rewrite. Its wait
-- stays under the API's own lock_timeout (0.5 s), so no partner query queued behind it times out;
-- the runner retries a wait that times out.
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "body" text;
