-- The purge's PostgreSQL statement before and after its lower bound (KeyTableSql#purgeFrom), side
-- by side on four key tables of the same rows: 2,000,000 expired records and 200,000 live ones
-- each, in the key table's shape (the first one's indexes built after its load, the copies filled
-- with theirs in place), autovacuum off for them (as when the purge outruns it). Each purge
-- deletes every expired record in batches of 1000, each batch committed on its own, in the order
-- before, after, after, before; psql prints each one's time. No traffic and no client round
-- trips: the statements' own cost. About 4 minutes and 4 GB of disk; the database is dropped at
-- the end.
--
--   psql -h 127.0.0.1 -U postgres -f tools/idem-benchmarks/sql/purge-keyset-ab.sql
\set ON_ERROR_STOP on
DROP DATABASE IF EXISTS idem_purge_ab;
CREATE DATABASE idem_purge_ab;
\c idem_purge_ab
\set expired 2000000
\set live 200000
CREATE TABLE t1 (
  principal VARCHAR(200) COLLATE "C" NOT NULL, operation VARCHAR(200) COLLATE "C" NOT NULL,
  idem_key VARCHAR(255) COLLATE "C" NOT NULL, fingerprint CHAR(64) NOT NULL, state VARCHAR(16) NOT NULL,
  owner_token VARCHAR(64) COLLATE "C", lease_until BIGINT, status INTEGER, response BYTEA,
  created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, PRIMARY KEY (principal, operation, idem_key))
  WITH (autovacuum_enabled = false);
INSERT INTO t1 SELECT 'user-' || (g % 5000), 'POST /notes', md5(g::text || 'k') || '-' || g, md5(g::text) || md5(g::text || 'f'),
  'COMPLETED', NULL, NULL, 201, convert_to(repeat('{"id":' || g || ',"title":"note"}', 3), 'UTF8'),
  0, CASE WHEN g <= :expired THEN 1000000 + (g::bigint * 43) ELSE 9000000000000 + g END
  FROM generate_series(1, :expired + :live) g;
CREATE INDEX t1_e ON t1 (expires_at);
VACUUM ANALYZE t1;
CREATE TABLE t2 (LIKE t1 INCLUDING ALL) WITH (autovacuum_enabled = false);
INSERT INTO t2 SELECT * FROM t1;
VACUUM ANALYZE t2;
CREATE TABLE t3 (LIKE t1 INCLUDING ALL) WITH (autovacuum_enabled = false);
INSERT INTO t3 SELECT * FROM t1;
VACUUM ANALYZE t3;
CREATE TABLE t4 (LIKE t1 INCLUDING ALL) WITH (autovacuum_enabled = false);
INSERT INTO t4 SELECT * FROM t1;
VACUUM ANALYZE t4;
SELECT pg_size_pretty(pg_total_relation_size('t1')) AS "the first table";
\timing on
\echo before: each batch from the front of the index, t1
DO $$ DECLARE n int; total bigint := 0; BEGIN LOOP
 DELETE FROM t1 WHERE (principal, operation, idem_key) IN (SELECT principal, operation, idem_key FROM t1
   WHERE expires_at <= CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) ORDER BY expires_at LIMIT 1000)
   AND expires_at <= CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT);
 GET DIAGNOSTICS n = ROW_COUNT; total := total + n; COMMIT; EXIT WHEN n < 1000; END LOOP;
 RAISE NOTICE 'old deleted %', total; END $$;
\echo after: each batch from the latest expiry the last one deleted, t2
DO $$ DECLARE n bigint; m bigint; b bigint := -9223372036854775808; total bigint := 0; BEGIN LOOP
 WITH gone AS (DELETE FROM t2 WHERE (principal, operation, idem_key) IN (SELECT principal, operation, idem_key FROM t2
   WHERE expires_at >= b AND expires_at <= (SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)) ORDER BY expires_at LIMIT 1000)
   AND expires_at <= CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) RETURNING expires_at)
 SELECT count(*), max(expires_at) INTO n, m FROM gone;
 total := total + n; IF m IS NOT NULL THEN b := m; END IF; COMMIT; EXIT WHEN n < 1000; END LOOP;
 RAISE NOTICE 'keyset deleted %', total; END $$;
\echo after: each batch from the latest expiry the last one deleted, t3
DO $$ DECLARE n bigint; m bigint; b bigint := -9223372036854775808; total bigint := 0; BEGIN LOOP
 WITH gone AS (DELETE FROM t3 WHERE (principal, operation, idem_key) IN (SELECT principal, operation, idem_key FROM t3
   WHERE expires_at >= b AND expires_at <= (SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)) ORDER BY expires_at LIMIT 1000)
   AND expires_at <= CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) RETURNING expires_at)
 SELECT count(*), max(expires_at) INTO n, m FROM gone;
 total := total + n; IF m IS NOT NULL THEN b := m; END IF; COMMIT; EXIT WHEN n < 1000; END LOOP;
 RAISE NOTICE 'keyset deleted %', total; END $$;
\echo before: each batch from the front of the index, t4
DO $$ DECLARE n int; total bigint := 0; BEGIN LOOP
 DELETE FROM t4 WHERE (principal, operation, idem_key) IN (SELECT principal, operation, idem_key FROM t4
   WHERE expires_at <= CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) ORDER BY expires_at LIMIT 1000)
   AND expires_at <= CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT);
 GET DIAGNOSTICS n = ROW_COUNT; total := total + n; COMMIT; EXIT WHEN n < 1000; END LOOP;
 RAISE NOTICE 'old deleted %', total; END $$;
\timing off
\c postgres
DROP DATABASE idem_purge_ab;
