package dev.idem.r2dbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.jdbc.Dialect;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/** The dialect comes from the factory's metadata; the table name and placeholders follow the JDBC store's rules. */
class R2dbcLeaseStoreBuilderTest {

  /** A factory that only names its database: building a store opens no connection. */
  private static ConnectionFactory named(String database) {
    return new ConnectionFactory() {
      @Override
      public Publisher<? extends Connection> create() {
        return Mono.error(new AssertionError("no connection is opened to build a store"));
      }

      @Override
      public ConnectionFactoryMetadata getMetadata() {
        return () -> database;
      }
    };
  }

  @Test
  void postgresqlAndMariadbAndMysqlAreDetectedFromTheMetadata() {
    assertThat(R2dbcLeaseStore.builder(named("PostgreSQL")).build().dialect()).isEqualTo(Dialect.postgresql());
    assertThat(R2dbcLeaseStore.builder(named("MariaDB")).build().dialect()).isEqualTo(Dialect.mysql());
    assertThat(R2dbcLeaseStore.builder(named("MySQL")).build().dialect()).isEqualTo(Dialect.mysql());
  }

  @Test
  void anotherDatabaseIsRefusedWithWhatToUseInstead() {
    assertThatThrownBy(() -> R2dbcLeaseStore.builder(named("H2")).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PostgreSQL and MariaDB/MySQL")
        .hasMessageContaining("\"H2\"")
        .hasMessageContaining("JdbcLeaseStore");
  }

  @Test
  void theTableNameIsValidatedAsTheJdbcStoresIs() {
    assertThatThrownBy(() -> R2dbcLeaseStore.builder(named("PostgreSQL")).table("keys; DROP TABLE x"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(R2dbcLeaseStore.builder(named("PostgreSQL")).table("my_keys").build().table()).isEqualTo("my_keys");
  }

  @Test
  void placeholdersAreNumberedOutsideQuotes() {
    assertThat(Placeholders.numbered("SELECT '?', \"a?\" FROM t WHERE a = ? AND b = ? LIMIT ?"))
        .isEqualTo("SELECT '?', \"a?\" FROM t WHERE a = $1 AND b = $2 LIMIT $3");
  }

  @Test
  void anInvalidArgumentFailsTheStageAndThrowsNothing() {
    R2dbcLeaseStore store = R2dbcLeaseStore.builder(named("PostgreSQL")).build();
    assertThat(store.purgeExpiredAsync(0).toCompletableFuture()).isCompletedExceptionally();
    assertThat(store.releaseAsync(null, null, "owner").toCompletableFuture()).isCompletedExceptionally();
  }
}
