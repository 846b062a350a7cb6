-- Idem key table for MySQL 8 and MariaDB 10.5 or later (InnoDB). Run it with your own
-- migrations, or let JdbcIdempotency create it on first use. Times are milliseconds since
-- the Unix epoch, taken from the database's clock. The binary collation keeps keys
-- case-sensitive: "ABC" and "abc" are two operations.
CREATE TABLE IF NOT EXISTS idem_keys (
  principal   VARCHAR(200) NOT NULL,
  operation   VARCHAR(200) NOT NULL,
  idem_key    VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  fingerprint CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  state       VARCHAR(16)  NOT NULL,
  owner_token VARCHAR(64),
  lease_until BIGINT,
  status      INT,
  response    LONGBLOB,
  created_at  BIGINT       NOT NULL,
  expires_at  BIGINT       NOT NULL,
  PRIMARY KEY (principal, operation, idem_key),
  INDEX idem_keys_expires_at (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
