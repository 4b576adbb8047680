-- Step 2 of 3 of partitioning events online: the partitioned table, beside events and unused until
-- 0019 swaps them. The same columns in the same order (LIKE): running processes hold prepared
-- `select * from events` statements, which fail with "cached plan must not change result type" if
-- the columns a name resolves to change. Range partitioned by created_at, one partition a month.
--
-- Its keys differ from the single table's: a partitioned table's unique keys must include the
-- partition key, so uniqueness is each partition's own — every partition has its primary key on
-- (id) and its unique (client_id, environment, sequence), made on the partition before it is
-- attached (libs/domain/src/events/partitions.ts makes the later ones the same way). Ids are
-- random UUIDs, and the stream's counter row (event_streams) hands out each sequence once, so
-- per-partition uniqueness is what the single table's indexes ever caught. The parent holds the
-- client_id foreign key: 0019 adopts the single table's validated one, and a new partition's is
-- checked on an empty table.
-- The months from the upper bound 0017 chose (B) come ready, three of them; the delivery worker's
-- maintenance keeps the current month and three ahead from then on.
-- Nothing else uses the new table: the locks here are on it, its partitions, and a moment's SHARE
-- ROW EXCLUSIVE on api_clients for the foreign key (rare writes; 200 ms wait at most, retried).
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '30s';--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "events_partitioned" (LIKE "events" INCLUDING DEFAULTS INCLUDING STORAGE INCLUDING COMMENTS) PARTITION BY RANGE ("created_at");--> statement-breakpoint
-- The table is new and empty (nothing to scan, no writer to block); the runner applies this file
-- in one transaction, which a failure rolls back whole.
-- squawk-ignore prefer-robust-stmts, adding-foreign-key-constraint, constraint-missing-not-valid
ALTER TABLE "events_partitioned" ADD CONSTRAINT "events_client_id_api_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."api_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
DO $$
DECLARE
  bounds text[];
  month_start timestamp;
  name text;
BEGIN
  SELECT array_agg(m[1]) INTO bounds
  FROM pg_constraint c, regexp_matches(pg_get_constraintdef(c.oid), '''([^'']+)''::timestamp with time zone', 'g') m
  WHERE c.conrelid = 'events'::regclass AND c.conname = 'events_legacy_range';
  IF coalesce(array_length(bounds, 1), 0) <> 2 THEN
    RAISE EXCEPTION 'events has no events_legacy_range constraint with two bounds (0017): %', bounds;
  END IF;
  month_start := bounds[2]::timestamptz AT TIME ZONE 'UTC';
  FOR i IN 0..2 LOOP
    name := 'events_p' || to_char(month_start, 'YYYY_MM');
    EXECUTE format('CREATE TABLE %I PARTITION OF "events_partitioned" FOR VALUES FROM (%L) TO (%L)',
      name, month_start AT TIME ZONE 'UTC', (month_start + interval '1 month') AT TIME ZONE 'UTC');
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY ("id")', name, name || '_pkey');
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I USING btree ("client_id", "environment", "sequence")', name || '_stream_sequence_idx', name);
    month_start := month_start + interval '1 month';
  END LOOP;
END $$;
