-- Idem outbox table for SQLite (3.35 or later: UPDATE ... RETURNING). Run it with your own
-- migrations, or call Outbox.createSchema once at start-up. One row per intent; id is derived
-- from the operation's scope, key and the intent's position. Times are milliseconds since the
-- Unix epoch, from the database's clock. TEXT compares byte for byte (BINARY collation).
CREATE TABLE IF NOT EXISTS idem_outbox (
  id              TEXT    NOT NULL PRIMARY KEY,
  principal       TEXT    NOT NULL,
  operation       TEXT    NOT NULL,
  idem_key        TEXT    NOT NULL,
  intent_no       INTEGER NOT NULL,
  kind            TEXT    NOT NULL,
  target          TEXT    NOT NULL,
  route           TEXT,
  headers         BLOB,
  body            BLOB    NOT NULL,
  state           TEXT    NOT NULL,
  attempts        INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  lease_owner     TEXT,
  last_error      TEXT,
  created_at      INTEGER NOT NULL,
  sent_at         INTEGER
);
CREATE INDEX IF NOT EXISTS idem_outbox_due ON idem_outbox (next_attempt_at) WHERE state = 'PENDING';
