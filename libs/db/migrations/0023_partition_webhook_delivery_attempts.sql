-- One short transaction (docs/migrations.md; 0021 prepared everything it needs): today's table
-- is renamed <table>_legacy and attached as the partition FROM (MINVALUE) TO (B) of its
-- partitioned twin, which takes the table's name. No row is read or written, no index is built,
-- so the exclusive locks last milliseconds; their waits are shorter than the API's lock_timeout
-- (0.5 s) and the runner retries. The previous release's statements (by id without the partition
-- key, DELETE … USING, FOR UPDATE SKIP LOCKED, RETURNING) run unchanged on the partitioned table;
-- a query by id probes each partition's index (a handful: weekly, 30 days kept).
-- Running it again after it committed changes nothing.
-- The attempts have no foreign key any more (0020): this locks one table.
-- The worker writes attempts all the time: many tries, each 200 ms at most.
-- lop-migrate: attempts 60
SET lock_timeout = '200ms';--> statement-breakpoint
SET statement_timeout = '5s';--> statement-breakpoint
CREATE OR REPLACE FUNCTION pg_temp.lop_partition_switch(tbl text, replaced text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  twin text := tbl || '_partitioned';
  legacy text := tbl || '_legacy';
  bound timestamptz;
  ix record;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = tbl::regclass) = 'p' THEN RETURN; END IF;
  SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''')::timestamptz INTO STRICT bound
  FROM pg_constraint WHERE conrelid = tbl::regclass AND conname = tbl || '_partition_bound';
  EXECUTE format('ALTER TABLE %I RENAME TO %I', tbl, legacy);
  -- The unique indexes without the partition key: their twins with it (0021) take their names.
  FOR ix IN SELECT unnest(replaced) AS name LOOP
    EXECUTE format('DROP INDEX %I', ix.name);
  END LOOP;
  FOR ix IN SELECT c.relname AS name FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
            WHERE x.indrelid = legacy::regclass AND c.relname NOT LIKE legacy || '_%' LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.name, legacy || substr(ix.name, length(tbl) + 1));
  END LOOP;
  -- The validated CHECK (key < bound) proves the partition constraint: no scan; every index the
  -- parent has exists on the legacy table already (0021): none is built.
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', twin, legacy, bound);
  FOR ix IN SELECT c.relname AS name FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
            WHERE x.indrelid = twin::regclass AND c.relname LIKE twin || '_%' LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.name, tbl || substr(ix.name, length(twin) + 1));
  END LOOP;
  EXECUTE format('ALTER TABLE %I RENAME TO %I', twin, tbl);
END $$;--> statement-breakpoint
SELECT pg_temp.lop_partition_switch('webhook_delivery_attempts', ARRAY['webhook_delivery_attempts_number_idx']);
