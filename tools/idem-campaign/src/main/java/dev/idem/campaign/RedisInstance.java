package dev.idem.campaign;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * A private Redis server that the campaign starts ({@code redis-server} in the foreground, a child
 * of this JVM) on a free loopback port with its data directory in a directory of its own, durable
 * writes ({@code appendonly yes}, {@code appendfsync always}, no RDB snapshots), kills with SIGKILL
 * ({@link Process#destroyForcibly()}) and starts again on the same port and directory, so that it
 * reloads its append-only file. Only the process this object started is ever killed. Not
 * thread-safe.
 */
public final class RedisInstance implements AutoCloseable {

  private final Path server;
  private final Path dir;
  private final int port;
  private Process process;
  private int kills;

  private RedisInstance(Path server, Path dir, int port) {
    this.server = server;
    this.dir = dir;
    this.port = port;
  }

  /** @return the server program: {@code IDEM_REDIS_SERVER} if set, else {@code /usr/bin/redis-server} */
  public static Path program() {
    String env = System.getenv("IDEM_REDIS_SERVER");
    return env == null || env.isBlank() ? Path.of("/usr/bin/redis-server") : Path.of(env);
  }

  /** @return why a private instance cannot be started here, or {@code null} if it can */
  public static String unavailableReason() {
    return Files.isExecutable(program()) ? null : "redis-server not found at " + program() + " (set IDEM_REDIS_SERVER)";
  }

  /**
   * Starts a server with its data in {@code dir}.
   *
   * @param dir an empty or missing directory (the caller deletes it)
   * @return the running instance
   * @throws IOException if it does not answer PING within 30 seconds (the message names its log)
   * @throws InterruptedException if interrupted
   */
  public static RedisInstance create(Path dir) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    RedisInstance r = new RedisInstance(program(), dir.toAbsolutePath(), Ports.free());
    r.start();
    return r;
  }

  /** @return its port on 127.0.0.1 */
  public int port() {
    return port;
  }

  /** @return {@code redis://127.0.0.1:port} */
  public String url() {
    return "redis://127.0.0.1:" + port;
  }

  /**
   * Starts the server if it is not running and waits until it answers PING (after loading its
   * append-only file).
   *
   * @throws IOException if it exits or does not answer within 30 seconds
   * @throws InterruptedException if interrupted
   */
  public void start() throws IOException, InterruptedException {
    if (process != null && process.isAlive()) {
      return;
    }
    Path log = dir.resolve("redis.log");
    List<String> command = List.of(server.toString(),
        "--port", Integer.toString(port), "--bind", "127.0.0.1", "--protected-mode", "no",
        "--dir", dir.toString(), "--daemonize", "no",
        "--appendonly", "yes", "--appendfsync", "always", "--save", "");
    process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("redis-server exited with " + process.exitValue() + "; its log: " + log + "\n" + PostgresInstance.tail(log));
      }
      if (pong()) {
        return;
      }
      Thread.sleep(50);
    }
    process.destroyForcibly();
    throw new IOException("redis-server did not answer PING within 30 s; its log: " + log);
  }

  /** @return whether the server answers {@code +PONG} (not {@code -LOADING}) */
  private boolean pong() {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 500);
      s.setSoTimeout(1000);
      OutputStream out = s.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[64];
      int n = in.read(buf);
      return n > 0 && new String(buf, 0, n, StandardCharsets.US_ASCII).startsWith("+PONG");
    } catch (IOException notYet) {
      return false;
    }
  }

  /**
   * Kills the server with SIGKILL and waits for it to end.
   *
   * @throws InterruptedException if interrupted
   */
  public void kill() throws InterruptedException {
    if (ChildProcesses.kill(process)) {
      kills++;
    }
  }

  /** @return how many times {@link #kill()} killed it */
  public int kills() {
    return kills;
  }

  /** Stops it (SIGTERM, then SIGKILL after 10 s). Idempotent. */
  @Override
  public void close() {
    ChildProcesses.stop(process);
  }

  @Override
  public String toString() {
    return "redis-server on 127.0.0.1:" + port + " in " + Objects.toString(dir);
  }
}
