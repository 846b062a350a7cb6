package dev.idem.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.common.utils.Time;
import org.jspecify.annotations.Nullable;

/**
 * One Kafka broker in KRaft combined mode (broker and controller, node 1) run as a separate
 * operating-system process, so that a test or a fault run can kill it with SIGKILL and start it
 * again <b>in place</b>: the same listener port, the same log directories, the same cluster id.
 * The in-JVM broker of {@link KafkaBroker} cannot do that (its test kit picks new ports on a
 * restart, and a JVM cannot SIGKILL a part of itself).
 *
 * <p>The child JVM is this JVM's {@code java} with this JVM's class path
 * ({@code java.class.path}: under Surefire the test class path, in the benchmarks' jar the jar),
 * so it runs the Kafka release the build resolved ({@code kafka.version} of the parent POM). The
 * directory is formatted once by Kafka's storage tool ({@code kafka.tools.StorageTool format}) with
 * a cluster id fixed for the life of this object; each start then runs {@link Main}, which is
 * {@code kafka.Kafka} without its logging (the class path binds slf4j to no-op), printing a fatal
 * error to the process's log file instead. The broker keeps Kafka's defaults for flushing: a
 * record is acknowledged once it is in the operating system's page cache, which a SIGKILL of the
 * process does not lose (a machine crash would; that is not what this class simulates).
 *
 * <p>Orphans: the child ends itself when its standard input closes, which happens when this JVM
 * ends, however it ends; {@link #close()} kills it and deletes the directory, and a shutdown hook
 * does the same.
 *
 * <p>Not thread-safe: one thread starts, kills and restarts it; {@link #bootstrapServers()} may be
 * read from any thread.
 */
public final class KafkaBrokerProcess implements AutoCloseable {

  /** Seconds a start may take before it is a failure (formatting and starting on a loaded 2-core machine). */
  private static final long START_TIMEOUT_SECONDS = 90;

  private final Path dir;
  private final Path config;
  private final Path log;
  private final int port;
  private final String clusterId = Uuid.randomUuid().toString();
  private final Thread shutdownHook = new Thread(this::destroyQuietly, "idem-kafka-broker-process-stop");
  private @Nullable Process process;
  private int starts;

  private KafkaBrokerProcess(Path dir, int port, int controllerPort, Map<String, String> overrides) throws IOException {
    this.dir = dir;
    this.port = port;
    this.config = dir.resolve("server.properties");
    this.log = dir.resolve("broker.log");
    Map<String, String> p = new LinkedHashMap<>();
    p.put("process.roles", "broker,controller");
    p.put("node.id", "1");
    p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
    p.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
    p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
    p.put("controller.listener.names", "CONTROLLER");
    p.put("inter.broker.listener.name", "PLAINTEXT");
    p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    p.put("log.dirs", dir.resolve("data").toString());
    p.put("auto.create.topics.enable", "false");
    p.put("group.initial.rebalance.delay.ms", "0");
    p.put("offsets.topic.replication.factor", "1");
    p.put("offsets.topic.num.partitions", "4");
    p.put("transaction.state.log.replication.factor", "1");
    p.put("transaction.state.log.min.isr", "1");
    p.put("transaction.state.log.num.partitions", "4");
    // A broker started again after SIGKILL cannot register while the controller still holds its
    // previous registration (DUPLICATE_BROKER_REGISTRATION) until that one's session expires, 9 s
    // by default, then backs off: restarts took 15 to 20 s. A 2 s session makes them about 5 s.
    p.put("broker.heartbeat.interval.ms", "500");
    p.put("broker.session.timeout.ms", "2000");
    p.putAll(overrides);
    StringBuilder text = new StringBuilder();
    p.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
    Files.writeString(config, text.toString(), StandardCharsets.UTF_8);
  }

  /**
   * Formats a new temporary directory and starts a broker on two free loopback ports (clients,
   * controller), returning once it answers an admin client.
   *
   * @param overrides broker properties set after this class's defaults (for example
   *     {@code log.flush.interval.messages}); empty for none
   * @return the running broker
   * @throws IllegalStateException if formatting fails or the broker does not answer within 90 s
   *     (the message has the end of its log)
   */
  public static KafkaBrokerProcess start(Map<String, String> overrides) {
    Path dir;
    try {
      dir = Files.createTempDirectory("idem-kafka-broker-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    KafkaBrokerProcess broker;
    try {
      int[] ports = freePorts();
      broker = new KafkaBrokerProcess(dir, ports[0], ports[1], overrides);
      broker.format();
    } catch (IOException | RuntimeException e) {
      deleteTree(dir);
      throw new IllegalStateException("the Kafka broker process could not be set up: " + e, e);
    }
    Runtime.getRuntime().addShutdownHook(broker.shutdownHook);
    try {
      broker.launch();
    } catch (RuntimeException e) {
      broker.close();
      throw e;
    }
    return broker;
  }

  /** @return {@code 127.0.0.1:port}: the same before and after a restart */
  public String bootstrapServers() {
    return "127.0.0.1:" + port;
  }

  /** @return the client listener's port, fixed for the life of this object */
  public int port() {
    return port;
  }

  /** @return the running process's id; another one after each restart */
  public synchronized long pid() {
    Process p = process;
    if (p == null || !p.isAlive()) {
      throw new IllegalStateException("the broker is not running");
    }
    return p.pid();
  }

  /** @return whether the broker process is alive */
  public synchronized boolean alive() {
    return process != null && process.isAlive();
  }

  /** @return how many times the broker was started, the first start included */
  public synchronized int starts() {
    return starts;
  }

  /**
   * Kills the broker with SIGKILL ({@link Process#destroyForcibly()}): no shutdown, no flush, no
   * leaving the group coordinators' state behind cleanly. Waits for the process to end.
   *
   * @throws IllegalStateException if it is not running, or has not ended 30 s later
   */
  public synchronized void kill() {
    Process p = process;
    if (p == null || !p.isAlive()) {
      throw new IllegalStateException("the broker is not running");
    }
    p.destroyForcibly();
    try {
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the broker process " + p.pid() + " did not end 30 s after SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the killed broker", e);
    }
    process = null;
  }

  /**
   * Starts the broker again in place (same port, same log directories, same cluster id) after
   * {@link #kill()}; it recovers its logs as after any unclean shutdown. Returns once it answers.
   *
   * @throws IllegalStateException if it is still running, or does not answer within 90 s
   */
  public synchronized void restart() {
    if (process != null && process.isAlive()) {
      throw new IllegalStateException("the broker is still running");
    }
    launch();
  }

  /** Kills the broker if it runs and deletes its directory. Idempotent. */
  @Override
  public synchronized void close() {
    destroyQuietly();
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException ignored) {
      // the JVM is already shutting down: the hook runs anyway
    }
  }

  private synchronized void destroyQuietly() {
    Process p = process;
    if (p != null) {
      p.destroyForcibly();
      try {
        p.waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      process = null;
    }
    deleteTree(dir);
  }

  private void format() throws IOException {
    List<String> command = javaCommand("kafka.tools.StorageTool");
    command.addAll(List.of("format", "-t", clusterId, "-c", config.toString()));
    Process p = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    p.getOutputStream().close();
    try {
      if (!p.waitFor(START_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("the storage tool did not end in " + START_TIMEOUT_SECONDS + " s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new IllegalStateException("interrupted while formatting", e);
    }
    if (p.exitValue() != 0) {
      throw new IllegalStateException("the storage tool exited with " + p.exitValue() + ":\n" + tail());
    }
  }

  private void launch() {
    long started = System.nanoTime();
    Process p;
    try {
      List<String> command = javaCommand(Main.class.getName());
      command.add(config.toString());
      // standard input stays a pipe from this JVM: the child ends when it closes
      p = new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    } catch (IOException e) {
      throw new UncheckedIOException("the Kafka broker process could not be started", e);
    }
    process = p;
    starts++;
    long deadline = started + TimeUnit.SECONDS.toNanos(START_TIMEOUT_SECONDS);
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
        AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 2000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 3000,
        AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 200))) {
      while (true) {
        if (!p.isAlive()) {
          process = null;
          throw new IllegalStateException("the Kafka broker process exited with " + p.exitValue() + ":\n" + tail());
        }
        try {
          if (!admin.describeCluster().nodes().get(3, TimeUnit.SECONDS).isEmpty()) {
            System.err.printf("[idem-kafka] broker process %d at %s started (start %d) in %d ms%n", p.pid(),
                bootstrapServers(), starts, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
            return;
          }
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException notYet) {
          // not listening yet, or not ready
        }
        if (System.nanoTime() > deadline) {
          p.destroyForcibly();
          process = null;
          throw new IllegalStateException("the Kafka broker at " + bootstrapServers() + " did not answer within "
              + START_TIMEOUT_SECONDS + " s:\n" + tail());
        }
        Thread.sleep(100);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      process = null;
      throw new IllegalStateException("interrupted while waiting for the broker", e);
    }
  }

  private static List<String> javaCommand(String mainClass) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    // a one-node test broker: a small heap, the serial collector and the client compiler only
    // (fewer threads and less compiling at start-up on a shared 2-core machine)
    command.addAll(List.of("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-Djava.awt.headless=true"));
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(mainClass);
    return command;
  }

  private String tail() {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (IOException e) {
      return "(" + log + " cannot be read: " + e.getMessage() + ")";
    }
  }

  private static int[] freePorts() throws IOException {
    // both sockets open at once, so the two ports differ
    try (ServerSocket a = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        ServerSocket b = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return new int[] {a.getLocalPort(), b.getLocalPort()};
    }
  }

  private static void deleteTree(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException | UncheckedIOException ignored) {
      // a temporary directory left behind is harmless
    }
  }

  /**
   * The child process: {@code kafka.Kafka}'s start-up for a KRaft server, with fatal errors
   * printed to standard error (the class path's slf4j binding is no-op) and an end when standard
   * input closes (the parent JVM is gone).
   */
  public static final class Main {

    private Main() {}

    /**
     * @param args one argument: the broker's properties file
     * @throws IOException if the file cannot be read
     */
    public static void main(String[] args) throws IOException {
      Exit.setExitProcedure((code, message) -> {
        System.err.println("[broker] exit " + code + ": " + message);
        System.exit(code);
      });
      Exit.setHaltProcedure((code, message) -> {
        System.err.println("[broker] halt " + code + ": " + message);
        Runtime.getRuntime().halt(code);
      });
      Thread orphanGuard = new Thread(() -> {
        try (InputStream in = System.in) {
          while (in.read() >= 0) {
            // nothing is sent; only the end of the stream matters
          }
        } catch (IOException ignored) {
          // the pipe broke: the parent is gone
        }
        System.err.println("[broker] the parent JVM is gone: halting");
        Runtime.getRuntime().halt(0);
      }, "parent-watch");
      orphanGuard.setDaemon(true);
      orphanGuard.start();
      Properties props = new Properties();
      try (Reader r = Files.newBufferedReader(Path.of(args[0]), StandardCharsets.UTF_8)) {
        props.load(r);
      }
      try {
        KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdown, "broker-shutdown"));
        server.startup();
        System.err.println("[broker] started");
        server.awaitShutdown();
      } catch (Throwable e) {
        System.err.println("[broker] fatal:");
        e.printStackTrace();
        Runtime.getRuntime().halt(1);
      }
    }
  }

  @Override
  public String toString() {
    return "KafkaBrokerProcess[" + bootstrapServers() + ", " + dir + "]";
  }
}
