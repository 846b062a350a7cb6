package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.internal.SchemaScript;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JdbcIdempotencyBuilderTest {

  @TempDir Path dir;

  @Test
  void tableMustBeAPlainIdentifier() {
    assertThat(JdbcIdempotency.builder().table("my_keys").build().table()).isEqualTo("my_keys");
    assertThatThrownBy(() -> JdbcIdempotency.builder().table("keys; DROP TABLE users"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("plain SQL identifier");
    assertThatThrownBy(() -> JdbcIdempotency.builder().table("public.keys")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> JdbcIdempotency.builder().table("1keys")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void retentionAndBusyTimeoutAreValidatedEagerly() {
    assertThat(JdbcIdempotency.builder().build().retention()).isEqualTo(Duration.ofHours(24));
    assertThatThrownBy(() -> JdbcIdempotency.builder().retention(Duration.ofMillis(999)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("retention");
    assertThatThrownBy(() -> JdbcIdempotency.builder().sqliteBusyTimeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> JdbcIdempotency.builder().sqliteBusyTimeout(Duration.ofHours(1))).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void executeWithoutDataSourceSaysWhatIsMissing() {
    JdbcIdempotency idem = JdbcIdempotency.builder().build();
    IdempotentRequest r = IdempotentRequest.ofJson("p", "op", "k", "{}".getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> idem.execute(r, c -> StoredResponse.of(200, "")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("DataSource");
  }

  @Test
  void schemaScriptRenamesTheTableAndItsIndex() {
    assertThat(SchemaScript.statements(Dialect.POSTGRESQL.schemaResource(), "orders_keys"))
        .hasSize(2)
        .allSatisfy(s -> assertThat(s).doesNotContain("idem_keys").doesNotContain("--"))
        .anySatisfy(s -> assertThat(s).contains("CREATE INDEX IF NOT EXISTS orders_keys_expires_at ON orders_keys"));
  }

  @Test
  void sqliteDriverDefaultBusyTimeoutIsRaisedToTheConfiguredLeast() throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("d.db"))) {
      IdempotentRequest r = IdempotentRequest.ofJson("p", "op", "k", "{}".getBytes(StandardCharsets.UTF_8));
      JdbcIdempotency.builder().build().execute(c, r, conn -> StoredResponse.of(201, "x"));
      try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("PRAGMA busy_timeout")) {
        rs.next();
        assertThat(rs.getLong(1)).as("sqlite-jdbc's 3000 ms default raised to 10 s").isEqualTo(10_000);
      }
    }
  }

  @Test
  void retentionBeyondTenYearsIsRefusedInsteadOfOverflowingLater() {
    assertThatThrownBy(() -> JdbcIdempotency.builder().retention(Duration.ofDays(3651)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("3650 days");
    assertThatThrownBy(() -> JdbcIdempotency.builder().retention(Duration.ofMillis(Long.MAX_VALUE - 1000)))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void detectsSqliteAndSetsABusyTimeoutWhenTheConnectionHasNone() throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("t.db"))) {
      assertThat(Dialect.detect(c)).isEqualTo(Dialect.SQLITE);
      try (Statement st = c.createStatement()) {
        st.execute("PRAGMA busy_timeout = 0"); // sqlite-jdbc sets 3000 ms by default
      }
      JdbcIdempotency idem = JdbcIdempotency.builder().sqliteBusyTimeout(Duration.ofMillis(1234)).build();
      IdempotentRequest r = IdempotentRequest.ofJson("p", "op", "k", "{}".getBytes(StandardCharsets.UTF_8));
      assertThat(idem.execute(c, r, conn -> StoredResponse.of(201, "x")).replayed()).isFalse();
      try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("PRAGMA busy_timeout")) {
        rs.next();
        assertThat(rs.getLong(1)).isEqualTo(1234);
      }
      assertThat(idem.execute(c, r, conn -> StoredResponse.of(500, "")).response().bodyAsString()).isEqualTo("x");
    }
  }

  @Test
  void sqliteBusyTimeoutIsReadOncePerPhysicalConnectionEvenThroughAPoolsProxies() throws Exception {
    try (Connection physical = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("p.db"))) {
      JdbcIdempotency idem = JdbcIdempotency.builder().sqliteBusyTimeout(Duration.ofMillis(4000)).build();
      idem.execute(borrowed(physical), IdempotentRequest.ofJson("p", "op", "k1", new byte[] {'1'}), conn -> StoredResponse.of(201, "x"));
      assertThat(busyTimeout(physical)).isEqualTo(4000);
      try (Statement st = physical.createStatement()) {
        st.execute("PRAGMA busy_timeout = 100"); // the application lowers it on purpose
      }
      // a second borrow is a new proxy around the same connection: not read again
      idem.execute(borrowed(physical), IdempotentRequest.ofJson("p", "op", "k2", new byte[] {'1'}), conn -> StoredResponse.of(201, "x"));
      assertThat(busyTimeout(physical)).isEqualTo(100);
      // a store that needs more than was checked reads and raises it
      JdbcIdempotency stricter = JdbcIdempotency.builder().sqliteBusyTimeout(Duration.ofMillis(6000)).build();
      stricter.execute(borrowed(physical), IdempotentRequest.ofJson("p", "op", "k3", new byte[] {'1'}), conn -> StoredResponse.of(201, "x"));
      assertThat(busyTimeout(physical)).isEqualTo(6000);
    }
  }

  /** A new proxy per call, as a pool hands out per borrow; unwrap(Connection.class) gives the physical one. */
  private static Connection borrowed(Connection physical) {
    return (Connection) Proxy.newProxyInstance(
        Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
          if (method.getName().equals("isWrapperFor")) {
            return args[0] == Connection.class;
          }
          if (method.getName().equals("unwrap")) {
            return physical;
          }
          try {
            return method.invoke(physical, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  private static long busyTimeout(Connection c) throws Exception {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("PRAGMA busy_timeout")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
