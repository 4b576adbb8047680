-- Issue 36: the first of three steps that remove idempotency_keys.state and locked_until, the lease
-- of releases before the key's owner became a transaction's advisory lock (domain orders/idempotency.ts).
-- Every release since writes 'completed' and now(); with these defaults the next release can stop
-- naming the columns on this schema, and the release after that drops them (docs/migrations.md).
-- A default is catalog only: no rewrite, no scan, the exclusive lock held for an instant.
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
-- The runner applies this file in one transaction, and setting a default again changes nothing.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "idempotency_keys" ALTER COLUMN "state" SET DEFAULT 'completed';--> statement-breakpoint
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "idempotency_keys" ALTER COLUMN "locked_until" SET DEFAULT now();
