-- Idem outbox table for H2 (2.2 or later, MVStore, native mode). Run it with your own migrations,
-- or call Outbox.createSchema once at start-up. One row per intent; id is derived from the
-- operation's scope, key and the intent's position. Times are milliseconds since the Unix epoch,
-- from the database's clock. H2 has no partial indexes: the due index covers every state.
CREATE TABLE IF NOT EXISTS idem_outbox (
  id              VARCHAR(36)   NOT NULL PRIMARY KEY,
  principal       VARCHAR(200)  NOT NULL,
  operation       VARCHAR(200)  NOT NULL,
  idem_key        VARCHAR(255)  NOT NULL,
  intent_no       INTEGER       NOT NULL,
  kind            VARCHAR(16)   NOT NULL,
  target          VARCHAR(2000) NOT NULL,
  route           VARCHAR(255),
  headers         VARBINARY,
  body            VARBINARY     NOT NULL,
  state           VARCHAR(8)    NOT NULL,
  attempts        INTEGER       NOT NULL,
  next_attempt_at BIGINT        NOT NULL,
  lease_owner     VARCHAR(64),
  last_error      VARCHAR(2000),
  created_at      BIGINT        NOT NULL,
  sent_at         BIGINT
);
CREATE INDEX IF NOT EXISTS idem_outbox_due ON idem_outbox (state, next_attempt_at);
