-- The access audit trail (docs/audit.md): two new tables, nothing existing is touched, so every
-- lock here is on a table no running process uses yet.
-- audit_records is range-partitioned by recorded_at, one partition a month, from its first
-- statement: it grows with every partner read and is kept for years, so retention drops whole
-- months (libs/domain/src/audit/partitions.ts). The parent is new and empty, so its first months are
-- made here directly; the delivery worker's maintenance keeps the current month and three ahead
-- from then on (plain table, then ATTACH, as for every live partitioned table).
-- Its primary key includes the partition key (a partitioned table's unique keys must); ids come
-- from one sequence for every partition. Indexes on the parent are cloned onto each partition.
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '30s';--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "audit_chain_heads" (
	"period" date PRIMARY KEY NOT NULL,
	"sealed_count" bigint NOT NULL,
	"head_hash" bytea NOT NULL,
	"sealed_at" timestamp with time zone NOT NULL
);--> statement-breakpoint
-- bigserial as the request log's (schema in drizzle, one sequence for every partition); status is an HTTP status.
CREATE TABLE IF NOT EXISTS "audit_records" (
	-- squawk-ignore prefer-identity
	"id" bigserial NOT NULL,
	"recorded_at" timestamp (3) with time zone NOT NULL,
	"kind" text NOT NULL,
	"laboratory_id" uuid,
	"client_id" uuid,
	"environment" "environment",
	"key_id" uuid,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"door" text NOT NULL,
	"route" text,
	-- squawk-ignore prefer-bigint-over-int
	"status" integer,
	"request_id" text,
	"order_id" text,
	"resource_id" text,
	"details" jsonb,
	"content_hash" bytea NOT NULL,
	"seal_seq" bigint,
	"chain_hash" bytea,
	CONSTRAINT "audit_records_pkey" PRIMARY KEY("recorded_at","id")
) PARTITION BY RANGE ("recorded_at");--> statement-breakpoint
-- The indexes are made on the new, empty parent before any partition exists, so nothing waits on
-- them (and CONCURRENTLY is not possible on a partitioned parent).
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX IF NOT EXISTS "audit_records_by_order" ON "audit_records" USING btree ("order_id","recorded_at");--> statement-breakpoint
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX IF NOT EXISTS "audit_records_by_resource" ON "audit_records" USING btree ("resource_id","recorded_at");--> statement-breakpoint
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX IF NOT EXISTS "audit_records_by_client" ON "audit_records" USING btree ("client_id","recorded_at");--> statement-breakpoint
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX IF NOT EXISTS "audit_records_by_key" ON "audit_records" USING btree ("key_id","recorded_at");--> statement-breakpoint
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX IF NOT EXISTS "audit_records_unsealed" ON "audit_records" USING btree ("recorded_at") WHERE "seal_seq" IS NULL;--> statement-breakpoint
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX IF NOT EXISTS "audit_records_by_seal" ON "audit_records" USING btree ("seal_seq") WHERE "audit_records"."seal_seq" is not null;--> statement-breakpoint
DO $$
DECLARE
  month_start timestamp := date_trunc('month', now() AT TIME ZONE 'UTC');
  name text;
BEGIN
  -- This month and the next three: the worker's maintenance takes over before they run out.
  FOR i IN 0..3 LOOP
    name := 'audit_records_p' || to_char(month_start, 'YYYY_MM');
    EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF "audit_records" FOR VALUES FROM (%L) TO (%L)',
      name, month_start AT TIME ZONE 'UTC', (month_start + interval '1 month') AT TIME ZONE 'UTC');
    month_start := month_start + interval '1 month';
  END LOOP;
END $$;
