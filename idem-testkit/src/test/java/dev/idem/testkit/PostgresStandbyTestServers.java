package dev.idem.testkit;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testclusters.PostgresReplicationProcesses.Replication;
import dev.idem.testclusters.PostgresReplicationProcesses;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension that gives a test class a database of its own on a PostgreSQL primary with a
 * streaming standby ({@link PostgresReplicationProcesses}), synchronous or asynchronous, that this
 * JVM starts once per kind for every class that uses it and stops when the test run ends (JUnit's
 * root store). The class's URL names both servers with {@code targetServerType=primary}; a class
 * that fails over leaves a primary and a streaming standby behind it, so the next class can go on.
 *
 * <p>When the servers cannot be started here ({@link PostgresReplicationProcesses#missing()}) the
 * class is skipped with a line on standard error starting with {@code [idem-testkit] SKIPPED:},
 * except under {@code CI=true}, where it fails; servers that do not come up fail the class in any case.
 */
final class PostgresStandbyTestServers implements BeforeAllCallback, AfterAllCallback {

  private final Replication replication;
  private PostgresReplicationProcesses servers;
  private String database;
  /** The unique id of the class whose {@link #beforeAll} set the database up, or {@code null}. */
  private String owner;

  private PostgresStandbyTestServers(Replication replication) {
    this.replication = replication;
  }

  static PostgresStandbyTestServers synchronous() {
    return new PostgresStandbyTestServers(Replication.SYNCHRONOUS);
  }

  static PostgresStandbyTestServers asynchronous() {
    return new PostgresStandbyTestServers(Replication.ASYNCHRONOUS);
  }

  PostgresReplicationProcesses servers() {
    if (servers == null) {
      throw new IllegalStateException("PostgresStandbyTestServers is not set up: register it with @RegisterExtension on a static field");
    }
    return servers;
  }

  String database() {
    return database;
  }

  /** @return the URL of this class's database on whichever server is the primary ({@code hostRecheckSeconds=1}) */
  String url() {
    return servers().jdbcUrl(database) + "&hostRecheckSeconds=1";
  }

  JdbcTarget target() {
    return JdbcTarget.of(url());
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    if (owner != null) {
      return; // a @Nested class of the class that registered this extension: its database is shared
    }
    owner = context.getUniqueId();
    String missing = PostgresReplicationProcesses.missing();
    if (missing != null) {
      String message = "a PostgreSQL primary and standby cannot be started here, missing: " + missing;
      if (TestDatabase.underCi()) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure");
      }
      System.err.println("[idem-testkit] SKIPPED: " + message + "; install them to run the standby suites");
      Assumptions.abort(message);
    }
    servers = context.getRoot().getStore(ExtensionContext.Namespace.create(PostgresStandbyTestServers.class))
        .getOrComputeIfAbsent(replication, k -> new Shared(PostgresReplicationProcesses.start(replication)), Shared.class).servers;
    servers.awaitStandbyStreaming(60_000);
    database = "idem_test_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
    servers.execute("CREATE DATABASE " + database);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (!context.getUniqueId().equals(owner)) {
      return; // a @Nested class ends: the class that set the database up removes it
    }
    owner = null;
    if (servers != null && database != null) {
      try {
        servers.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
      } catch (RuntimeException ignored) {
        // the servers go at the end of the run anyway
      }
    }
    servers = null;
  }

  /** The shared servers, closed by JUnit when the root store closes (the end of the run). */
  private record Shared(PostgresReplicationProcesses servers) implements AutoCloseable {
    @Override
    public void close() {
      servers.close();
    }
  }
}
