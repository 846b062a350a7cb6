-- Idem key table for MySQL 8 and MariaDB 10.5 or later (InnoDB). Run it with your own
-- migrations, or let JdbcIdempotency create it on first use. Times are milliseconds since
-- the Unix epoch, taken from the database's clock.
-- The columns that identify a record (principal, operation, idem_key) and the owner token are
-- VARBINARY: they compare byte for byte. A character column would compare through a collation,
-- and every PAD SPACE collation (utf8mb4_bin and ascii_bin included) ignores trailing spaces,
-- so "k1 " would find the record of "k1". VARBINARY(600) holds any 200-character scope part in
-- UTF-8; VARBINARY(256) any 64-character owner token. The fingerprint is compared in Java.
CREATE TABLE IF NOT EXISTS idem_keys (
  principal   VARBINARY(600) NOT NULL,
  operation   VARBINARY(600) NOT NULL,
  idem_key    VARBINARY(255) NOT NULL,
  fingerprint CHAR(64)       CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  state       VARCHAR(16)    NOT NULL,
  owner_token VARBINARY(256),
  lease_until BIGINT,
  status      INT,
  response    LONGBLOB,
  created_at  BIGINT         NOT NULL,
  expires_at  BIGINT         NOT NULL,
  PRIMARY KEY (principal, operation, idem_key),
  INDEX idem_keys_expires_at (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
