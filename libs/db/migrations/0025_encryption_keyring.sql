-- Issue 33: online rotation of the key that encrypts personal data at rest (docs/operations.md
-- § Key and secret rotation, libs/domain/src/security/key-rotation.ts). The keyring: one row per
-- data-key version, its key wrapped by the master key. Version 1 has no wrapped key: it is the key
-- derived from the master key that every earlier release writes with (`v1.…`), and stays until
-- retired. A new table: nothing the previous release reads or writes changes.
SET lock_timeout = '1s';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "encryption_keys" (
	-- Key versions are few (one per rotation): an integer, as the protected tables' key_version.
	-- squawk-ignore prefer-bigint-over-int
	"version" integer PRIMARY KEY NOT NULL,
	"wrapped_key" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"reencrypted_rows" bigint DEFAULT 0 NOT NULL,
	"reencrypt_last_batch_at" timestamp with time zone,
	"reencrypt_done_at" timestamp with time zone
);--> statement-breakpoint
INSERT INTO "encryption_keys" ("version") VALUES (1) ON CONFLICT DO NOTHING;--> statement-breakpoint
-- The key version a stored value names: 1 for `v1.…`, N for `v2.N.…` (security/protector.ts);
-- null for anything else. The protected tables' triggers (0026, 0027) label each row with it.
CREATE OR REPLACE FUNCTION "lop_key_version_of"(stored text) RETURNS integer
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $$ SELECT CASE WHEN stored LIKE 'v1.%' THEN 1 WHEN stored ~ '^v2\.[1-9][0-9]{0,8}\.' THEN split_part(stored, '.', 2)::integer END $$;
