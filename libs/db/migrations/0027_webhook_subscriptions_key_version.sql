-- Issue 33: webhook_subscriptions.key_version, the key version of secret_protected (the signing
-- secret), as 0026 does for orders and for the same reasons: set by a trigger from the stored text
-- for every writer, and a foreign key to the keyring so that a version still in use cannot be
-- retired. The table is small (subscriptions per API client): no index, a scan is cheap.
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
-- Key versions are few (one per rotation), and the keyring's key is an integer.
-- squawk-ignore prefer-bigint-over-int
ALTER TABLE "webhook_subscriptions" ADD COLUMN IF NOT EXISTS "key_version" integer;--> statement-breakpoint
CREATE OR REPLACE FUNCTION "lop_webhook_subscriptions_key_version"() RETURNS trigger
	LANGUAGE plpgsql
	AS $$ BEGIN NEW.key_version := lop_key_version_of(NEW.secret_protected); RETURN NEW; END $$;--> statement-breakpoint
CREATE OR REPLACE TRIGGER "webhook_subscriptions_key_version" BEFORE INSERT OR UPDATE OF "secret_protected" ON "webhook_subscriptions"
	FOR EACH ROW EXECUTE FUNCTION "lop_webhook_subscriptions_key_version"();--> statement-breakpoint
-- The runner applies this file in one transaction: a rerun replays it whole.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "webhook_subscriptions_key_version_fk" FOREIGN KEY ("key_version") REFERENCES "encryption_keys"("version") NOT VALID;
