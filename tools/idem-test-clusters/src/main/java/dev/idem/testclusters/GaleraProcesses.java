package dev.idem.testclusters;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * A MariaDB Galera Cluster of {@code mariadbd} processes that this object started on free loopback
 * ports, for tests: by default three nodes, every node's files in a temporary directory of its own,
 * the first node bootstrapped with {@code --wsrep-new-cluster} from a fresh {@code
 * mariadb-install-db}, the others joining with an rsync state transfer (SST). {@link #close()} stops
 * only these processes and deletes the directory. {@link #single()} starts one plain {@code
 * mariadbd} with the same settings and no wsrep, to compare against.
 *
 * <p>Every node runs with the settings Galera needs ({@code binlog_format=ROW}, {@code
 * innodb_autoinc_lock_mode=2}, InnoDB) and a small buffer pool and gcache; the wsrep settings Idem
 * needs of a session ({@code wsrep_sync_wait}) are the client's, see {@code docs/high-availability.md}.
 * As root the servers run as the {@code mysql} user ({@code --user=mysql}): rsync's daemon, which
 * the joiner's SST starts, would otherwise drop to {@code nobody} and fail to write the data directory.
 *
 * <p>Found on the machine, or named by environment variables: {@code mariadbd} ({@code
 * IDEM_TEST_MARIADBD}, else {@code /usr/sbin/mariadbd}), {@code mariadb-install-db}, the Galera
 * provider ({@code IDEM_TEST_GALERA_PROVIDER}, else {@code /usr/lib/galera/libgalera_smm.so} and the
 * usual other places), {@code rsync} and {@code wsrep_sst_rsync}. {@link #available()} tells whether
 * they are all there; a test should skip with a message when not, and fail under {@code CI=true}.
 *
 * <p>{@link #kill(int)} is a {@code kill -9} of one node, {@link #restart(int)} starts it again with
 * its data directory (it rejoins with an incremental or a full state transfer) and waits until it is
 * synced. Not thread-safe.
 */
public final class GaleraProcesses implements AutoCloseable {

  private static final long START_TIMEOUT_MILLIS = 120_000;
  private static final String[] PROVIDERS = {
      "/usr/lib/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so", "/usr/lib64/galera-4/libgalera_smm.so",
      "/usr/lib64/galera/libgalera_smm.so", "/usr/lib/x86_64-linux-gnu/galera/libgalera_smm.so"};

  private final String server;
  private final String installDb;
  private final @Nullable String provider;
  private final Path dir;
  private final List<Node> nodes = new ArrayList<>();
  private final @Nullable String user;
  private final List<String> extraArgs;

  private static final class Node {
    final int index;
    final int sqlPort;
    final int groupPort;
    final int istPort;
    final int sstPort;
    final Path home;
    @Nullable Process process;

    Node(int index, int sqlPort, int groupPort, int istPort, int sstPort, Path home) {
      this.index = index;
      this.sqlPort = sqlPort;
      this.groupPort = groupPort;
      this.istPort = istPort;
      this.sstPort = sstPort;
      this.home = home;
    }
  }

  private GaleraProcesses(String server, String installDb, @Nullable String provider, Path dir, @Nullable String user,
      List<String> extraArgs) {
    this.server = server;
    this.installDb = installDb;
    this.provider = provider;
    this.dir = dir;
    this.user = user;
    this.extraArgs = List.copyOf(extraArgs);
  }

  /** @return {@code mariadbd}, or {@code null} */
  public static @Nullable String serverExecutable() {
    return ProcessSupport.executable("IDEM_TEST_MARIADBD", "mariadbd", "/usr/sbin/mariadbd");
  }

  /** @return the Galera provider library, or {@code null} */
  public static @Nullable String provider() {
    String configured = System.getenv("IDEM_TEST_GALERA_PROVIDER");
    if (configured != null && !configured.isBlank()) {
      return new File(configured).isFile() ? configured : null;
    }
    for (String p : PROVIDERS) {
      if (new File(p).isFile()) {
        return p;
      }
    }
    return null;
  }

  /** @return what is missing to start a Galera cluster here, or {@code null} when nothing is */
  public static @Nullable String missing() {
    List<String> missing = new ArrayList<>();
    if (serverExecutable() == null) {
      missing.add("mariadbd (Debian package mariadb-server, or IDEM_TEST_MARIADBD)");
    }
    if (ProcessSupport.executable(null, "mariadb-install-db", "/usr/bin/mariadb-install-db") == null) {
      missing.add("mariadb-install-db (mariadb-server)");
    }
    if (provider() == null) {
      missing.add("the Galera provider libgalera_smm.so (Debian package galera-4, or IDEM_TEST_GALERA_PROVIDER)");
    }
    if (ProcessSupport.executable(null, "rsync", "/usr/bin/rsync") == null) {
      missing.add("rsync (Debian package rsync), for the state transfer");
    }
    if (ProcessSupport.executable(null, "wsrep_sst_rsync", "/usr/bin/wsrep_sst_rsync") == null) {
      missing.add("wsrep_sst_rsync (mariadb-server)");
    }
    if (ProcessSupport.root() && !ProcessSupport.userExists("mysql")) {
      missing.add("a 'mysql' user to run the servers as (this JVM runs as root)");
    }
    return missing.isEmpty() ? null : String.join(", ", missing);
  }

  /** @return true if a cluster can be started here ({@link #missing()} is {@code null}) */
  public static boolean available() {
    return missing() == null;
  }

  /**
   * Starts a cluster of {@code size} nodes and waits until every node is synced and sees all the
   * others (about 20 to 40 s for three nodes on two cores).
   *
   * @param size 1 or more (3 for a cluster that survives the loss of a node)
   * @param extraArgs more {@code mariadbd} options for every node, such as {@code "--wsrep-sync-wait=1"}
   * @return the running cluster; the caller closes it
   * @throws IllegalStateException if something is missing ({@link #missing()}) or the cluster does
   *     not come up within 120 s (the processes started so far are stopped)
   */
  public static GaleraProcesses start(int size, String... extraArgs) {
    if (size < 1) {
      throw new IllegalArgumentException("a cluster has at least one node");
    }
    GaleraProcesses cluster = create(true, List.of(extraArgs));
    try {
      cluster.layOut(size);
      Node first = cluster.nodes.get(0);
      cluster.installDb(first);
      cluster.launch(first, true);
      cluster.awaitSynced(first.index, START_TIMEOUT_MILLIS);
      for (int i = 1; i < size; i++) {
        Node joiner = cluster.nodes.get(i);
        cluster.emptyDataDir(joiner);
        cluster.launch(joiner, false);
      }
      for (int i = 1; i < size; i++) {
        cluster.awaitSynced(i, START_TIMEOUT_MILLIS);
      }
      cluster.awaitClusterSize(size, START_TIMEOUT_MILLIS);
      return cluster;
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  /**
   * Starts one plain {@code mariadbd} (no wsrep) with the settings of a cluster's nodes, to compare
   * a cluster against.
   *
   * @param extraArgs more {@code mariadbd} options
   * @return the running server as a one-node "cluster" whose node 0 is the server; the caller closes it
   */
  public static GaleraProcesses single(String... extraArgs) {
    GaleraProcesses one = create(false, List.of(extraArgs));
    try {
      one.layOut(1);
      Node node = one.nodes.get(0);
      one.installDb(node);
      one.launch(node, false);
      one.awaitAnswer(node, START_TIMEOUT_MILLIS);
      return one;
    } catch (RuntimeException e) {
      one.close();
      throw e;
    }
  }

  private static GaleraProcesses create(boolean wsrep, List<String> extraArgs) {
    String missing = missing();
    if (missing != null) {
      throw new IllegalStateException("cannot start a Galera cluster, missing: " + missing);
    }
    Path dir;
    try {
      dir = Files.createTempDirectory("idem-galera-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String user = ProcessSupport.root() ? "mysql" : null;
    return new GaleraProcesses(serverExecutable(), ProcessSupport.executable(null, "mariadb-install-db", "/usr/bin/mariadb-install-db"),
        wsrep ? provider() : null, dir, user, extraArgs);
  }

  private void layOut(int size) {
    List<Integer> ports = ProcessSupport.freePorts(4 * size);
    for (int i = 0; i < size; i++) {
      Path home = dir.resolve("node-" + i);
      try {
        Files.createDirectories(home.resolve("data"));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      nodes.add(new Node(i, ports.get(4 * i), ports.get(4 * i + 1), ports.get(4 * i + 2), ports.get(4 * i + 3), home));
    }
    if (user != null) {
      ProcessSupport.chown(dir, user);
    }
  }

  /** @return how many nodes the cluster was started with */
  public int size() {
    return nodes.size();
  }

  /** @return node {@code n}'s SQL port on 127.0.0.1 */
  public int port(int n) {
    return node(n).sqlPort;
  }

  /**
   * @param n the node, from 0
   * @param database a database name, or {@code ""} for none
   * @return a MariaDB Connector/J URL for node {@code n} as {@code root} without a password
   */
  public String jdbcUrl(int n, String database) {
    return "jdbc:mariadb://127.0.0.1:" + port(n) + "/" + database + "?user=root";
  }

  /**
   * @param database a database name
   * @param mode Connector/J's high-availability mode, such as {@code "loadbalance"} or {@code "sequential"}
   * @return a URL that lists every node, for a client that moves to another node when one fails
   */
  public String jdbcUrlOfAll(String database, String mode) {
    StringJoiner hosts = new StringJoiner(",");
    for (Node node : nodes) {
      hosts.add("127.0.0.1:" + node.sqlPort);
    }
    return "jdbc:mariadb:" + mode + "://" + hosts + "/" + database + "?user=root";
  }

  /** @return the server's version text, from node 0 or the first live node */
  public String serverVersion() {
    for (Node node : nodes) {
      if (isAlive(node.index)) {
        return queryValue(node.index, "SELECT CONCAT(VERSION(), ' ', IFNULL((SELECT VARIABLE_VALUE FROM"
            + " information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_PROVIDER_VERSION'), ''))");
      }
    }
    return "(no live node)";
  }

  /** @return whether node {@code n}'s process runs */
  public boolean isAlive(int n) {
    Process p = node(n).process;
    return p != null && p.isAlive();
  }

  /** Runs one statement on node {@code n} as root, in auto-commit. */
  public void execute(int n, String sql) {
    try (Connection c = connect(n); Statement st = c.createStatement()) {
      st.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("node " + n + ": " + sql + ": " + e.getMessage(), e);
    }
  }

  /** @return the first column of the first row of a query on node {@code n}, or {@code null} */
  public @Nullable String queryValue(int n, String sql) {
    try (Connection c = connect(n); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    } catch (SQLException e) {
      throw new IllegalStateException("node " + n + ": " + sql + ": " + e.getMessage(), e);
    }
  }

  private Connection connect(int n) throws SQLException {
    return DriverManager.getConnection(jdbcUrl(n, "") + "&connectTimeout=2000&socketTimeout=30000");
  }

  /** @return a wsrep status value of node {@code n} ({@code SHOW STATUS LIKE name}), or {@code null} if it does not answer */
  public @Nullable String status(int n, String name) {
    try (Connection c = connect(n); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SHOW STATUS LIKE '" + name.replace("'", "") + "'")) {
      return rs.next() ? rs.getString(2) : null;
    } catch (SQLException e) {
      return null;
    }
  }

  /**
   * Kills one node with SIGKILL ({@code kill -9}); only a process this object started.
   *
   * @param n the node, from 0
   */
  public void kill(int n) {
    Process p = node(n).process;
    if (p == null) {
      throw new IllegalStateException("node " + n + " was never started");
    }
    ProcessSupport.killHard(p);
  }

  /**
   * Starts a killed node again with its data directory and waits until it is synced with the others.
   *
   * @param n the node, from 0
   */
  public void restart(int n) {
    if (isAlive(n)) {
      throw new IllegalStateException("node " + n + " still runs");
    }
    Node node = node(n);
    launch(node, false);
    if (provider == null) {
      awaitAnswer(node, START_TIMEOUT_MILLIS);
    } else {
      awaitSynced(n, START_TIMEOUT_MILLIS);
    }
  }

  /**
   * Waits until node {@code n} answers, is {@code Synced} and ready ({@code wsrep_ready=ON}).
   *
   * @throws IllegalStateException on timeout or if the node's process exits, with its log's end
   */
  public void awaitSynced(int n, long timeoutMillis) {
    Node node = node(n);
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    String last = "";
    while (System.nanoTime() < deadline) {
      if (!isAlive(n)) {
        throw new IllegalStateException("node " + n + " exited:\n" + ProcessSupport.tail(node.home.resolve("error.log"), 40));
      }
      String state = status(n, "wsrep_local_state_comment");
      String ready = status(n, "wsrep_ready");
      last = state + ", ready " + ready;
      if ("Synced".equals(state) && "ON".equals(ready)) {
        return;
      }
      ProcessSupport.sleep(200);
    }
    throw new IllegalStateException("node " + n + " was not synced within " + timeoutMillis + " ms (" + last + "):\n"
        + ProcessSupport.tail(node.home.resolve("error.log"), 40));
  }

  /** Waits until every live node is synced and sees {@code size} members. */
  public void awaitClusterSize(int size, long timeoutMillis) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    StringBuilder view = new StringBuilder();
    while (System.nanoTime() < deadline) {
      view.setLength(0);
      boolean ok = true;
      for (Node node : nodes) {
        if (!isAlive(node.index)) {
          continue;
        }
        String members = status(node.index, "wsrep_cluster_size");
        String state = status(node.index, "wsrep_local_state_comment");
        view.append("node ").append(node.index).append(": ").append(members).append(" members, ").append(state).append('\n');
        ok &= String.valueOf(size).equals(members) && "Synced".equals(state);
      }
      if (ok) {
        return;
      }
      ProcessSupport.sleep(200);
    }
    throw new IllegalStateException("the cluster did not reach " + size + " synced members within " + timeoutMillis + " ms:\n" + view);
  }

  private void awaitAnswer(Node node, long timeoutMillis) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    while (System.nanoTime() < deadline) {
      if (!isAlive(node.index)) {
        throw new IllegalStateException("mariadbd exited:\n" + ProcessSupport.tail(node.home.resolve("error.log"), 40));
      }
      try (Connection c = connect(node.index)) {
        return;
      } catch (SQLException notYet) {
        ProcessSupport.sleep(200);
      }
    }
    throw new IllegalStateException("mariadbd did not answer within " + timeoutMillis + " ms:\n"
        + ProcessSupport.tail(node.home.resolve("error.log"), 40));
  }

  /** Stops every node this object started (SIGTERM, then SIGKILL after 30 s) and deletes their files. */
  @Override
  public void close() {
    for (Node node : nodes) {
      if (node.process != null && node.process.isAlive()) {
        node.process.destroy();
      }
    }
    for (Node node : nodes) {
      if (node.process != null) {
        ProcessSupport.stop(node.process, 30);
      }
    }
    ProcessSupport.deleteTree(dir);
  }

  @Override
  public String toString() {
    List<Integer> ports = new ArrayList<>();
    for (Node node : nodes) {
      ports.add(node.sqlPort);
    }
    return "GaleraProcesses" + ports;
  }

  // ------------------------------------------------------------------ processes

  private Node node(int n) {
    if (n < 0 || n >= nodes.size()) {
      throw new IllegalArgumentException("no node " + n + " in a cluster of " + nodes.size());
    }
    return nodes.get(n);
  }

  private void installDb(Node node) {
    List<String> args = new ArrayList<>(List.of(installDb, "--no-defaults", "--datadir=" + node.home.resolve("data"),
        "--auth-root-authentication-method=normal", "--skip-test-db"));
    if (user != null) {
      args.add("--user=" + user);
    }
    ProcessSupport.runOrFail(args, 120);
  }

  private void emptyDataDir(Node node) {
    // A joiner starts empty: the donor's rsync SST fills it.
    ProcessSupport.deleteTree(node.home.resolve("data"));
    try {
      Files.createDirectories(node.home.resolve("data"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (user != null) {
      ProcessSupport.chown(node.home, user);
    }
  }

  private void launch(Node node, boolean bootstrap) {
    Path home = node.home;
    List<String> args = new ArrayList<>(List.of(server,
        "--no-defaults",
        "--datadir=" + home.resolve("data"),
        "--port=" + node.sqlPort,
        "--bind-address=127.0.0.1",
        "--socket=" + home.resolve("mysqld.sock"),
        "--pid-file=" + home.resolve("mysqld.pid"),
        "--log-error=" + home.resolve("error.log"),
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=64M",
        "--innodb-log-file-size=48M",
        "--max-connections=300",
        "--default-storage-engine=InnoDB",
        "--binlog-format=ROW",
        "--innodb-autoinc-lock-mode=2",
        "--character-set-server=utf8mb4"));
    if (user != null) {
      args.add("--user=" + user);
    }
    if (provider != null) {
      StringJoiner members = new StringJoiner(",");
      for (Node n : nodes) {
        members.add("127.0.0.1:" + n.groupPort);
      }
      args.addAll(List.of(
          "--wsrep-on=ON",
          "--wsrep-provider=" + provider,
          "--wsrep-cluster-name=idem-test",
          "--wsrep-node-name=node-" + node.index,
          "--wsrep-cluster-address=gcomm://" + members,
          "--wsrep-node-address=127.0.0.1:" + node.groupPort,
          "--wsrep-node-incoming-address=127.0.0.1:" + node.sqlPort,
          "--wsrep-sst-method=rsync",
          "--wsrep-sst-receive-address=127.0.0.1:" + node.sstPort,
          // A killed member is suspected after 2 s and evicted after 4 s: the others go on without it.
          "--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:" + node.groupPort
              + ";ist.recv_addr=127.0.0.1:" + node.istPort
              + ";gcache.size=64M;evs.keepalive_period=PT0.5S;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT4S;evs.install_timeout=PT4S"));
      if (bootstrap) {
        args.add("--wsrep-new-cluster");
      }
    }
    args.addAll(extraArgs);
    try {
      Process p = new ProcessBuilder(args).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(home.resolve("stdout.log").toFile())).start();
      node.process = p;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start " + server, e);
    }
  }
}
