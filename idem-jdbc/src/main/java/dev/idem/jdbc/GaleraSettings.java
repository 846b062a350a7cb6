package dev.idem.jdbc;

import dev.idem.core.IdemStoreException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A start-up check for a MariaDB (or MySQL) server that is a Galera Cluster node: whether the
 * session has what transactional mode relies on there (see {@code docs/high-availability.md}).
 *
 * <ul>
 *   <li>{@code wsrep_sync_wait} with bit 1 (reads) set, on Idem's sessions: a retry that reaches
 *       another node than its first attempt reads the key's record there, and without it that read
 *       may run before the node applied the first attempt's commit. It then finds no record and runs
 *       the effect again; certification rolls that run back (no second effect commits), but the
 *       retry is answered with a failure instead of the stored response (measured in {@code
 *       GaleraMultiNodeTest}: 11 to 12 of 300 replays on another node right after the commit found
 *       no record without it, none with it). Set it for the pool's sessions ({@code
 *       sessionVariables=wsrep_sync_wait=1} in a MariaDB Connector/J URL) or in the servers'
 *       configuration.
 *   <li>{@code binlog_format=ROW} and {@code innodb_autoinc_lock_mode=2}, which Galera itself needs
 *       for the key table's and the effects' writes to replicate as they committed.
 *   <li>The node is ready ({@code wsrep_ready=ON}): a node outside the primary component refuses
 *       every statement.
 * </ul>
 *
 * <p>A server without wsrep, or with {@code wsrep_on=OFF}, has nothing to check: {@link
 * #problems(Connection)} is empty. Not called by Idem itself; an application or a framework
 * integration calls it once at start-up on a connection of the pool it gives Idem (the Spring Boot
 * starter would do it where it creates the key table, in {@code IdemTransactionalAutoConfiguration}).
 * Stateless and thread-safe.
 */
public final class GaleraSettings {

  private GaleraSettings() {}

  /**
   * @param connection a connection as the application's pool gives it, used by this thread only
   * @return whether the server is a Galera node with wsrep on for this session
   * @throws SQLException if the server cannot be asked
   */
  public static boolean isGaleraNode(Connection connection) throws SQLException {
    Objects.requireNonNull(connection, "connection");
    if (!Dialect.detect(connection).mayBeGaleraNode()) {
      return false;
    }
    String on = variable(connection, "wsrep_on");
    String provider = variable(connection, "wsrep_provider");
    return on != null && (on.equals("1") || on.equalsIgnoreCase("ON")) && provider != null && !provider.equalsIgnoreCase("none");
  }

  /**
   * @param connection a connection as the application's pool gives it, used by this thread only
   * @return what this session or node lacks for transactional mode on Galera, one sentence each;
   *     empty when nothing, or when the server is not a Galera node
   * @throws SQLException if the server cannot be asked
   */
  public static List<String> problems(Connection connection) throws SQLException {
    List<String> problems = new ArrayList<>();
    if (!isGaleraNode(connection)) {
      return problems;
    }
    String syncWait = variable(connection, "wsrep_sync_wait");
    long wait = syncWait == null ? 0 : Long.parseLong(syncWait.trim());
    if ((wait & 1) == 0) {
      problems.add("wsrep_sync_wait is " + wait + " in this session: a retry that reaches another node may read the key's"
          + " record before that node applied the first attempt's commit, run the effect again and be rolled back by"
          + " certification instead of replaying the stored response; set wsrep_sync_wait=1 for Idem's sessions"
          + " (MariaDB Connector/J: sessionVariables=wsrep_sync_wait=1 in the URL) or in the servers' configuration");
    }
    String binlog = variable(connection, "binlog_format");
    if (binlog != null && !binlog.equalsIgnoreCase("ROW")) {
      problems.add("binlog_format is " + binlog + ": Galera replicates row events only; set binlog_format=ROW on every node");
    }
    String autoinc = variable(connection, "innodb_autoinc_lock_mode");
    if (autoinc != null && !autoinc.trim().equals("2")) {
      problems.add("innodb_autoinc_lock_mode is " + autoinc + ": Galera needs 2 (interleaved) on every node");
    }
    String ready = status(connection, "wsrep_ready");
    if (ready != null && !ready.equalsIgnoreCase("ON")) {
      problems.add("wsrep_ready is " + ready + ": this node is not part of the primary component and refuses statements");
    }
    return problems;
  }

  /**
   * Refuses a Galera node whose session lacks what transactional mode relies on ({@link #problems}).
   *
   * @param connection a connection as the application's pool gives it
   * @throws IdemStoreException naming every problem, if there is one, or if the server cannot be asked
   */
  public static void require(Connection connection) {
    List<String> problems;
    try {
      problems = problems(connection);
    } catch (SQLException e) {
      throw new IdemStoreException("cannot read the server's wsrep settings: " + e.getMessage(), e);
    }
    if (!problems.isEmpty()) {
      throw new IdemStoreException("this Galera node's settings are not safe for Idem's transactional mode: "
          + String.join("; ", problems), null);
    }
  }

  private static @Nullable String variable(Connection connection, String name) throws SQLException {
    try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery("SHOW VARIABLES LIKE '" + name + "'")) {
      return rs.next() ? rs.getString(2) : null;
    }
  }

  private static @Nullable String status(Connection connection, String name) throws SQLException {
    try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery("SHOW STATUS LIKE '" + name + "'")) {
      return rs.next() ? rs.getString(2) : null;
    }
  }
}
