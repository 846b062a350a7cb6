-- Idem key table for PostgreSQL (11 or later). Run it with your own migrations, or let
-- JdbcIdempotency create it on first use. Times are milliseconds since the Unix epoch,
-- taken from the database's clock.
-- The columns that identify a record (principal, operation, idem_key) and the owner token use
-- the "C" collation: deterministic and byte-ordered, so they compare byte for byte whatever the
-- database's default collation, and no nondeterministic (case- or accent-insensitive) collation
-- can make two keys equal. VARCHAR, not CHAR(n), which would ignore trailing spaces.
CREATE TABLE IF NOT EXISTS idem_keys (
  principal   VARCHAR(200) COLLATE "C" NOT NULL,
  operation   VARCHAR(200) COLLATE "C" NOT NULL,
  idem_key    VARCHAR(255) COLLATE "C" NOT NULL,
  fingerprint CHAR(64)     NOT NULL,
  state       VARCHAR(16)  NOT NULL,
  owner_token VARCHAR(64)  COLLATE "C",
  lease_until BIGINT,
  status      INTEGER,
  response    BYTEA,
  created_at  BIGINT       NOT NULL,
  expires_at  BIGINT       NOT NULL,
  PRIMARY KEY (principal, operation, idem_key)
);
CREATE INDEX IF NOT EXISTS idem_keys_expires_at ON idem_keys (expires_at);
