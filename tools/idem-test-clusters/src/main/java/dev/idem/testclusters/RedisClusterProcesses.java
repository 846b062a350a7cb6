package dev.idem.testclusters;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * A Redis Cluster of {@code redis-server} processes that this object started on free loopback
 * ports, for tests: by default three masters with one replica each, {@code cluster-node-timeout}
 * 1 s (so a replica takes over a dead master within a few seconds), {@code appendonly yes}, every
 * node's files in a temporary directory of its own. {@link #close()} stops only these processes and
 * deletes the directory.
 *
 * <p>{@code redis-server} and {@code redis-cli} are looked up on the {@code PATH}, or taken from
 * {@code IDEM_TEST_REDIS_SERVER} and {@code IDEM_TEST_REDIS_CLI}. {@link #available()} tells whether
 * they are there; a test should skip with a message when not, and fail under {@code CI=true}
 * (idem-testkit's {@code TestDatabase.underCi()}).
 *
 * <p>{@link #kill(int)} is a {@code kill -9} of one node (a process this object started), {@link
 * #restart(int)} starts it again on its port with its data and {@code nodes.conf}, so it rejoins the
 * cluster. Not thread-safe except {@link #command(int, String...)}.
 */
public final class RedisClusterProcesses implements AutoCloseable {

  private static final long START_TIMEOUT_MILLIS = 60_000;

  private final String server;
  private final String cli;
  private final Path dir;
  private final List<Integer> ports;
  private final Map<Integer, Process> processes = new LinkedHashMap<>();
  private final List<String> extraConfig;

  private RedisClusterProcesses(String server, String cli, Path dir, List<Integer> ports, List<String> extraConfig) {
    this.server = server;
    this.cli = cli;
    this.dir = dir;
    this.ports = List.copyOf(ports);
    this.extraConfig = List.copyOf(extraConfig);
  }

  /** @return the {@code redis-server} executable, or {@code null} if there is none */
  public static @Nullable String serverExecutable() {
    return executable("IDEM_TEST_REDIS_SERVER", "redis-server");
  }

  /** @return true if both {@code redis-server} and {@code redis-cli} can be found */
  public static boolean available() {
    return serverExecutable() != null && executable("IDEM_TEST_REDIS_CLI", "redis-cli") != null;
  }

  /**
   * Starts {@code masters * (1 + replicasPerMaster)} nodes, creates the cluster with {@code
   * redis-cli --cluster create} and waits until every node reports {@code cluster_state:ok} and
   * every master has its replicas connected.
   *
   * @param masters 3 or more (Redis Cluster's minimum)
   * @param replicasPerMaster 0 or more
   * @param extraConfig more {@code redis-server} arguments, e.g. {@code "--appendfsync", "always"}
   * @return the running cluster; the caller closes it
   * @throws IllegalStateException if the executables are missing or the cluster does not come up
   *     within 60 s (the processes started so far are stopped)
   */
  public static RedisClusterProcesses start(int masters, int replicasPerMaster, String... extraConfig) {
    if (masters < 3 || replicasPerMaster < 0) {
      throw new IllegalArgumentException("need at least 3 masters and 0 or more replicas per master");
    }
    String server = serverExecutable();
    String cli = executable("IDEM_TEST_REDIS_CLI", "redis-cli");
    if (server == null || cli == null) {
      throw new IllegalStateException("redis-server and redis-cli are needed on the PATH (or IDEM_TEST_REDIS_SERVER"
          + " and IDEM_TEST_REDIS_CLI)");
    }
    Path dir;
    try {
      dir = Files.createTempDirectory("idem-redis-cluster-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    RedisClusterProcesses cluster = new RedisClusterProcesses(server, cli, dir,
        freePorts(masters * (1 + replicasPerMaster)), List.of(extraConfig));
    try {
      for (int port : cluster.ports) {
        cluster.launch(port);
      }
      for (int port : cluster.ports) {
        cluster.awaitPing(port);
      }
      List<String> create = new ArrayList<>(List.of(cli, "--cluster", "create"));
      for (int port : cluster.ports) {
        create.add("127.0.0.1:" + port);
      }
      create.addAll(List.of("--cluster-replicas", Integer.toString(replicasPerMaster), "--cluster-yes"));
      String out = run(create, 60);
      if (!out.contains("[OK] All 16384 slots covered")) {
        throw new IllegalStateException("redis-cli --cluster create failed:\n" + out);
      }
      cluster.awaitHealthy(START_TIMEOUT_MILLIS);
      return cluster;
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  /** @return every node's port, in the order they were started */
  public List<Integer> ports() {
    return ports;
  }

  /** @return the {@code redis-server --version} text of the executable used */
  public String serverVersion() {
    return run(List.of(server, "--version"), 10).trim();
  }

  /**
   * Runs one command on one node with {@code redis-cli} (raw output).
   *
   * @param port the node's port
   * @param args the command and its arguments
   * @return the reply as {@code redis-cli} prints it when its output is not a terminal (raw),
   *     trimmed; an error reply is returned as text, not thrown
   */
  public String command(int port, String... args) {
    List<String> line = new ArrayList<>(List.of(cli, "-h", "127.0.0.1", "-p", Integer.toString(port)));
    line.addAll(List.of(args));
    return run(line, 30).trim();
  }

  /** @return the ports of the nodes that are currently masters and alive */
  public List<Integer> masters() {
    List<Integer> masters = new ArrayList<>();
    for (int port : ports) {
      if (isAlive(port) && role(port).equals("master")) {
        masters.add(port);
      }
    }
    return masters;
  }

  /** @return {@code master} or {@code slave} (Redis's word), or {@code down} if it does not answer */
  public String role(int port) {
    try {
      String info = command(port, "ROLE");
      return info.isEmpty() ? "down" : info.lines().findFirst().orElse("down");
    } catch (RuntimeException e) {
      return "down";
    }
  }

  /**
   * @param masterPort a master's port
   * @return the ports of the live replicas that replicate that master
   */
  public List<Integer> replicasOf(int masterPort) {
    List<Integer> replicas = new ArrayList<>();
    for (int port : ports) {
      if (port != masterPort && isAlive(port)) {
        String info = command(port, "INFO", "replication");
        if (info.contains("master_port:" + masterPort + "\r") || info.contains("master_port:" + masterPort + "\n")) {
          replicas.add(port);
        }
      }
    }
    return replicas;
  }

  /** @return true if the node's process runs */
  public boolean isAlive(int port) {
    Process p = processes.get(port);
    return p != null && p.isAlive();
  }

  /**
   * Kills one node with SIGKILL ({@code kill -9}); only a process this object started.
   *
   * @param port the node's port
   */
  public void kill(int port) {
    Process p = processes.get(port);
    if (p == null) {
      throw new IllegalArgumentException("no node of this cluster on port " + port);
    }
    p.destroyForcibly();
    try {
      p.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Freezes one node with SIGSTOP (its connections stay open but nothing is read or answered, so a
   * frozen replica acknowledges nothing); only a process this object started.
   *
   * @param port the node's port
   */
  public void freeze(int port) {
    signal(port, "-STOP");
  }

  /**
   * Lets a {@link #freeze(int) frozen} node run again (SIGCONT).
   *
   * @param port the node's port
   */
  public void thaw(int port) {
    signal(port, "-CONT");
  }

  private void signal(int port, String signal) {
    Process p = processes.get(port);
    if (p == null || !p.isAlive()) {
      throw new IllegalArgumentException("no live node of this cluster on port " + port);
    }
    run(List.of("kill", signal, Long.toString(p.pid())), 10);
  }

  /**
   * Starts a killed node again on its port, with its data directory and {@code nodes.conf}, and
   * waits until it answers.
   *
   * @param port the node's port
   */
  public void restart(int port) {
    if (isAlive(port)) {
      throw new IllegalStateException("the node on port " + port + " still runs");
    }
    launch(port);
    awaitPing(port);
  }

  /**
   * Waits until every live node says {@code cluster_state:ok}, sees the same masters, and every
   * master has as many connected replicas as it had at creation (all live replicas online).
   *
   * @param timeoutMillis how long to wait
   * @throws IllegalStateException on timeout, with each node's view
   */
  public void awaitHealthy(long timeoutMillis) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    String last = "";
    while (System.nanoTime() < deadline) {
      StringBuilder view = new StringBuilder();
      boolean ok = true;
      int liveReplicas = 0;
      int onlineReplicas = 0;
      for (int port : ports) {
        if (!isAlive(port)) {
          continue;
        }
        String info = command(port, "CLUSTER", "INFO");
        String replication = command(port, "INFO", "replication");
        view.append(port).append(": ").append(info.contains("cluster_state:ok") ? "ok" : "not ok")
            .append(", ").append(replication.contains("role:master") ? "master" : "replica").append('\n');
        ok &= info.contains("cluster_state:ok");
        if (replication.contains("role:slave")) {
          liveReplicas++;
          if (replication.contains("master_link_status:up")) {
            onlineReplicas++;
          }
        }
      }
      if (ok && liveReplicas == onlineReplicas && replicasConnectedAtMasters(liveReplicas)) {
        return;
      }
      last = view.toString();
      sleep(100);
    }
    throw new IllegalStateException("the Redis cluster did not become healthy within " + timeoutMillis + " ms:\n" + last);
  }

  private boolean replicasConnectedAtMasters(int liveReplicas) {
    int connected = 0;
    for (int port : ports) {
      if (isAlive(port)) {
        String replication = command(port, "INFO", "replication");
        if (replication.contains("role:master")) {
          for (String line : replication.split("\r?\n")) {
            if (line.startsWith("slave") && line.contains("state=online")) {
              connected++;
            }
          }
        }
      }
    }
    return connected == liveReplicas;
  }

  /** Stops every node this object started (SHUTDOWN NOSAVE, then SIGKILL) and deletes their files. */
  @Override
  public void close() {
    for (Map.Entry<Integer, Process> e : processes.entrySet()) {
      Process p = e.getValue();
      if (p.isAlive()) {
        p.destroy(); // SIGTERM: redis-server exits at once
      }
    }
    for (Process p : processes.values()) {
      try {
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          p.waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        p.destroyForcibly();
      }
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    } catch (IOException ignored) {
      // a temporary directory left behind is harmless
    }
  }

  @Override
  public String toString() {
    return "RedisClusterProcesses" + ports;
  }

  // ------------------------------------------------------------------ processes

  private void launch(int port) {
    Path nodeDir = dir.resolve("node-" + port);
    try {
      Files.createDirectories(nodeDir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<String> args = new ArrayList<>(List.of(server,
        "--port", Integer.toString(port),
        "--bind", "127.0.0.1",
        "--protected-mode", "no",
        "--daemonize", "no",
        "--dir", nodeDir.toString(),
        "--logfile", nodeDir.resolve("redis.log").toString(),
        "--cluster-enabled", "yes",
        "--cluster-config-file", nodeDir.resolve("nodes.conf").toString(),
        "--cluster-node-timeout", "1000",
        "--appendonly", "yes",
        "--save", ""));
    args.addAll(extraConfig);
    try {
      Process p = new ProcessBuilder(args).redirectErrorStream(true)
          .redirectOutput(nodeDir.resolve("stdout.log").toFile()).start();
      processes.put(port, p);
    } catch (IOException e) {
      throw new UncheckedIOException("could not start " + server, e);
    }
  }

  private void awaitPing(int port) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (System.nanoTime() < deadline) {
      if (!isAlive(port)) {
        throw new IllegalStateException("redis-server on port " + port + " exited; see " + dir.resolve("node-" + port));
      }
      try {
        if (command(port, "PING").equals("PONG")) {
          return;
        }
      } catch (RuntimeException ignored) {
        // not up yet
      }
      sleep(50);
    }
    throw new IllegalStateException("redis-server on port " + port + " did not answer within 20 s");
  }

  private static String run(List<String> command, int timeoutSeconds) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("timed out: " + String.join(" ", command));
      }
      return new String(out, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Ports p with p and p + 10000 (the cluster bus) free on loopback, from 20000 to 29999. */
  private static List<Integer> freePorts(int count) {
    Random random = new Random();
    List<Integer> ports = new ArrayList<>();
    for (int tries = 0; ports.size() < count && tries < 10_000; tries++) {
      int port = 20_000 + random.nextInt(10_000);
      if (!ports.contains(port) && free(port) && free(port + 10_000)) {
        ports.add(port);
      }
    }
    if (ports.size() < count) {
      throw new IllegalStateException("no " + count + " free loopback ports found");
    }
    return ports;
  }

  private static boolean free(int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(false);
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static String executable(String env, String name) {
    String configured = System.getenv(env);
    if (configured != null && !configured.isBlank()) {
      return new File(configured).canExecute() ? configured : null;
    }
    String path = System.getenv("PATH");
    if (path == null) {
      return null;
    }
    for (String d : path.split(File.pathSeparator)) {
      File f = new File(d, name);
      if (f.canExecute()) {
        return f.getAbsolutePath();
      }
    }
    return null;
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
