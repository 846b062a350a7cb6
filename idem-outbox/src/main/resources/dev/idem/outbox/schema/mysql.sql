-- Idem outbox table for MySQL 8 and MariaDB 10.5 or later (InnoDB). Run it with your own
-- migrations, or call Outbox.createSchema once at start-up (DDL commits implicitly on MySQL, so
-- never inside a transaction). One row per intent; id is derived from the operation's scope, key
-- and the intent's position. Every column that identifies a row or an owner is VARBINARY, so it
-- compares byte for byte: no PAD SPACE, no case folding. Times are milliseconds since the Unix
-- epoch, from the database's clock.
CREATE TABLE IF NOT EXISTS idem_outbox (
  id              VARBINARY(36)   NOT NULL,
  principal       VARBINARY(800)  NOT NULL,
  operation       VARBINARY(800)  NOT NULL,
  idem_key        VARBINARY(255)  NOT NULL,
  intent_no       INT             NOT NULL,
  kind            VARBINARY(16)   NOT NULL,
  target          VARBINARY(8000) NOT NULL,
  route           VARBINARY(1020),
  headers         LONGBLOB,
  body            LONGBLOB        NOT NULL,
  state           VARBINARY(8)    NOT NULL,
  attempts        INT             NOT NULL,
  next_attempt_at BIGINT          NOT NULL,
  lease_owner     VARBINARY(64),
  last_error      VARCHAR(2000),
  created_at      BIGINT          NOT NULL,
  sent_at         BIGINT,
  PRIMARY KEY (id),
  INDEX idem_outbox_due (state, next_attempt_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
