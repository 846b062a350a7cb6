-- Idem key table for SQLite (3.35 or later). Run it with your own migrations, or let
-- JdbcIdempotency create it on first use. Times are milliseconds since the Unix epoch,
-- taken from the database's clock. WITHOUT ROWID: the primary key is the only B-tree.
-- TEXT columns without a COLLATE clause use SQLite's BINARY collation: principal, operation,
-- idem_key and owner_token compare byte for byte (never NOCASE or RTRIM).
CREATE TABLE IF NOT EXISTS idem_keys (
  principal   TEXT    NOT NULL,
  operation   TEXT    NOT NULL,
  idem_key    TEXT    NOT NULL,
  fingerprint TEXT    NOT NULL,
  state       TEXT    NOT NULL,
  owner_token TEXT,
  lease_until INTEGER,
  status      INTEGER,
  response    BLOB,
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  PRIMARY KEY (principal, operation, idem_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idem_keys_expires_at ON idem_keys (expires_at);
