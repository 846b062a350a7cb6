package dev.idem.testkit;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testclusters.GaleraProcesses;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension that gives a test class a database of its own on a three-node MariaDB Galera
 * Cluster ({@link GaleraProcesses}) that this JVM starts once, for every class that uses it, and
 * stops when the test run ends (it lives in JUnit's root store). A class that kills a node
 * restarts it before it ends, so the next class finds three synced nodes.
 *
 * <p>When the cluster cannot be started here ({@link GaleraProcesses#missing()}) the class is
 * skipped with a line on standard error starting with {@code [idem-testkit] SKIPPED:}, except under
 * {@code CI=true}, where it fails; a cluster that does not come up fails the class in any case.
 */
final class GaleraTestCluster implements BeforeAllCallback, AfterAllCallback {

  /** What Idem's sessions on a Galera node need ({@code docs/high-availability.md}): reads wait for causality. */
  static final String SYNC_WAIT = "wsrep_sync_wait=1";

  private GaleraProcesses cluster;
  private String database;
  /** The unique id of the class whose {@link #beforeAll} set the database up, or {@code null}. */
  private String owner;

  static GaleraTestCluster shared() {
    return new GaleraTestCluster();
  }

  GaleraProcesses cluster() {
    if (cluster == null) {
      throw new IllegalStateException("GaleraTestCluster is not set up: register it with @RegisterExtension on a static field");
    }
    return cluster;
  }

  String database() {
    return database;
  }

  /** @return node {@code n}'s URL for this class's database, with {@link #SYNC_WAIT} */
  String url(int n) {
    return url(n, SYNC_WAIT);
  }

  /** @return node {@code n}'s URL for this class's database with these session variables ({@code ""} for none) */
  String url(int n, String sessionVariables) {
    String url = cluster().jdbcUrl(n, database);
    return sessionVariables.isEmpty() ? url : url + "&sessionVariables=" + sessionVariables;
  }

  /** @return where the contract opens connections to node {@code n}, with {@link #SYNC_WAIT} */
  JdbcTarget target(int n) {
    return JdbcTarget.of(url(n));
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    if (owner != null) {
      return; // a @Nested class of the class that registered this extension: its database is shared
    }
    owner = context.getUniqueId();
    String missing = GaleraProcesses.missing();
    if (missing != null) {
      String message = "a Galera cluster cannot be started here, missing: " + missing;
      if (TestDatabase.underCi()) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure");
      }
      System.err.println("[idem-testkit] SKIPPED: " + message + "; install them to run the Galera suites");
      Assumptions.abort(message);
    }
    cluster = context.getRoot().getStore(ExtensionContext.Namespace.create(GaleraTestCluster.class))
        .getOrComputeIfAbsent("cluster", k -> new Shared(GaleraProcesses.start(3)), Shared.class).cluster;
    for (int n = 0; n < cluster.size(); n++) {
      if (!cluster.isAlive(n)) {
        cluster.restart(n); // a class before this one failed while a node was down
      }
    }
    cluster.awaitClusterSize(cluster.size(), 120_000);
    database = "idem_test_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
    cluster.execute(0, "CREATE DATABASE " + database + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (!context.getUniqueId().equals(owner)) {
      return; // a @Nested class ends: the class that set the database up removes it
    }
    owner = null;
    if (cluster != null && database != null) {
      for (int n = 0; n < cluster.size(); n++) {
        if (cluster.isAlive(n)) {
          try {
            cluster.execute(n, "DROP DATABASE IF EXISTS " + database);
          } catch (RuntimeException ignored) {
            // the cluster goes at the end of the run anyway
          }
          break;
        }
      }
    }
    cluster = null;
  }

  /** The shared cluster, closed by JUnit when the root store closes (the end of the run). */
  private record Shared(GaleraProcesses cluster) implements AutoCloseable {
    @Override
    public void close() {
      cluster.close();
    }
  }
}
