-- Idem key table for H2 (2.2 or later, MVStore, native mode). Run it with your own migrations,
-- or let JdbcIdempotency create it on first use, outside a transaction (H2's DDL commits the open
-- transaction). Times are milliseconds since the Unix epoch, taken from the database's clock.
-- The columns that identify a record (principal, operation, idem_key) and the owner token are
-- VARCHAR, compared byte for byte as long as the database has no collation (SET COLLATION) and
-- is not opened with IGNORECASE=TRUE; not CHAR(n), which pads with spaces.
CREATE TABLE IF NOT EXISTS idem_keys (
  principal   VARCHAR(200) NOT NULL,
  operation   VARCHAR(200) NOT NULL,
  idem_key    VARCHAR(255) NOT NULL,
  fingerprint CHAR(64)     NOT NULL,
  state       VARCHAR(16)  NOT NULL,
  owner_token VARCHAR(64),
  lease_until BIGINT,
  status      INTEGER,
  response    VARBINARY,
  created_at  BIGINT       NOT NULL,
  expires_at  BIGINT       NOT NULL,
  PRIMARY KEY (principal, operation, idem_key)
);
CREATE INDEX IF NOT EXISTS idem_keys_expires_at ON idem_keys (expires_at);
