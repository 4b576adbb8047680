-- Step 3 of 3 of partitioning events online: one short transaction swaps the tables. The single
-- table is renamed events_legacy and attached as the partition of its own range — the CHECK 0017
-- validated proves the range, so ATTACH does not scan it, and its primary key, stream index and
-- client foreign key stay as they are (the parent's foreign key adopts its validated one) — then
-- the partitioned table takes the name events. Every statement of both releases names events and
-- resolves it again at its next run: prepared statements are re-planned on the partitioned table,
-- whose columns are the single table's, in the same order (0018).
-- Locks: ACCESS EXCLUSIVE on the single table (the rename) and on the unused partitioned one, SHARE
-- UPDATE EXCLUSIVE for the attach: held for the catalog changes only, and waited for at most 200 ms,
-- under the API's lock_timeout (0.5 s), so partner queries queued behind the wait never time out;
-- the runner retries the whole transaction.
-- Every partner transaction touches events, some for seconds on a busy machine (an order operation
-- reads the stream's position first and appends last), so a 200 ms moment with no holder may take
-- many tries: 60 of them, each waiting at most 200 ms, then backing off (up to 5 s) so partners
-- run between them. (The rolling-upgrade test saw 10 tries fail in a row.)
-- lop-migrate: attempts 60
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
DO $$
DECLARE
  bounds text[];
  month_start timestamp;
  name text;
BEGIN
  -- Partitioned already: a rerun of a transaction that committed (nothing to do).
  IF (SELECT relkind FROM pg_class WHERE oid = 'events'::regclass) = 'p' THEN
    RETURN;
  END IF;
  SELECT array_agg(m[1]) INTO bounds
  FROM pg_constraint c, regexp_matches(pg_get_constraintdef(c.oid), '''([^'']+)''::timestamp with time zone', 'g') m
  WHERE c.conrelid = 'events'::regclass AND c.conname = 'events_legacy_range' AND c.convalidated;
  IF coalesce(array_length(bounds, 1), 0) <> 2 THEN
    RAISE EXCEPTION 'events has no validated events_legacy_range constraint (0017): %', bounds;
  END IF;
  -- The single table first, then the partitioned one: the rename and attach take their locks in this order.
  LOCK TABLE "events" IN ACCESS EXCLUSIVE MODE;
  IF EXISTS (SELECT FROM "events") THEN
    ALTER TABLE "events" RENAME TO "events_legacy";
    EXECUTE format('ALTER TABLE "events_partitioned" ATTACH PARTITION "events_legacy" FOR VALUES FROM (%L) TO (%L)', bounds[1], bounds[2]);
  ELSE
    -- A database with no events yet (a new installation, a test's) needs no legacy partition: its
    -- range gets monthly partitions like every later month, and the empty table goes (under the
    -- lock taken above, no insert can have reached it; nothing references it since 0016).
    month_start := bounds[1]::timestamptz AT TIME ZONE 'UTC';
    WHILE month_start < bounds[2]::timestamptz AT TIME ZONE 'UTC' LOOP
      name := 'events_p' || to_char(month_start, 'YYYY_MM');
      EXECUTE format('CREATE TABLE %I PARTITION OF "events_partitioned" FOR VALUES FROM (%L) TO (%L)',
        name, month_start AT TIME ZONE 'UTC', (month_start + interval '1 month') AT TIME ZONE 'UTC');
      EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY ("id")', name, name || '_pkey');
      EXECUTE format('CREATE UNIQUE INDEX %I ON %I USING btree ("client_id", "environment", "sequence")', name || '_stream_sequence_idx', name);
      month_start := month_start + interval '1 month';
    END LOOP;
    DROP TABLE "events";
  END IF;
  ALTER TABLE "events_partitioned" RENAME TO "events";
END $$;
