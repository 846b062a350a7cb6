package dev.idem.docs;

import dev.idem.core.ResponseProtection;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import java.sql.Connection;
import javax.sql.DataSource;

/** The snippets of docs/operations.md; run by {@link QuickStartTest} on SQLite. */
final class OperationsSnippets {

  private OperationsSnippets() {}

  static JdbcIdempotency protection(DataSource dataSource, String base64KeyFromYourSecretStore) {
    // tag::protection[]
    ResponseProtection keys = ResponseProtection.builder()
        .key("2025-06", base64KeyFromYourSecretStore)   // 32 random bytes: openssl rand -base64 32
        .currentKey("2025-06")
        .build();
    JdbcIdempotency idem = JdbcIdempotency.builder().responseProtection(keys).build();
    LeaseStore store = JdbcLeaseStore.builder(dataSource).responseProtection(keys).build();  // or RedisLeaseStore.builder(redis)
    // end::protection[]
    return idem;
  }

  static long purge(JdbcIdempotency idem, Connection connection) {
    // tag::purge[]
    long removed = idem.purgeExpired(connection, 1000);  // expired records, in batches of 1000, each committed
    // end::purge[]
    return removed;
  }
}
