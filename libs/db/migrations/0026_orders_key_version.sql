-- Issue 33: orders.key_version, the key version of protected_data, so the re-encryption job and
-- `admin encryption status` find rows per version by index (orders grows to millions of rows; the
-- version otherwise sits inside the text, which no index can reach cheaply), and so retiring a key
-- can be refused by the database itself while any row names it.
-- Set by a trigger from the stored text, for every writer: this release, and the previous one,
-- which still writes `v1.…` during a rollout and knows nothing of the column. The trigger runs only
-- when protected_data is written (INSERT, or an UPDATE that sets it): laboratory state changes do
-- not pay for it.
-- The foreign key to the keyring makes retiring (deleting) a version fail while any row names it,
-- including a row whose insert is still in flight (the insert holds its key-share lock on the
-- keyring row until commit): a process that has not heard of a rotation yet can never leave a row
-- no key can read. NOT VALID and never validated: every row before this migration has a null
-- key_version, which a foreign key does not check; every later value is checked when written.
-- Catalog changes only (no rewrite, no scan); each exclusive lock waits less than the API's own
-- lock_timeout (0.5 s), and the runner retries the wait.
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
-- Key versions are few (one per rotation), and the keyring's key is an integer.
-- squawk-ignore prefer-bigint-over-int
ALTER TABLE "orders" ADD COLUMN IF NOT EXISTS "key_version" integer;--> statement-breakpoint
CREATE OR REPLACE FUNCTION "lop_orders_key_version"() RETURNS trigger
	LANGUAGE plpgsql
	AS $$ BEGIN NEW.key_version := lop_key_version_of(NEW.protected_data); RETURN NEW; END $$;--> statement-breakpoint
CREATE OR REPLACE TRIGGER "orders_key_version" BEFORE INSERT OR UPDATE OF "protected_data" ON "orders"
	FOR EACH ROW EXECUTE FUNCTION "lop_orders_key_version"();--> statement-breakpoint
-- The runner applies this file in one transaction: a rerun replays it whole.
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "orders" ADD CONSTRAINT "orders_key_version_fk" FOREIGN KEY ("key_version") REFERENCES "encryption_keys"("version") NOT VALID;
