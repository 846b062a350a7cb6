package dev.idem.campaign;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The notes service ({@code examples/notes-service}) as a child process of this JVM on a fixed
 * loopback port, so that it can be killed with SIGKILL ({@link Process#destroyForcibly()}) and
 * started again at the same address while clients keep retrying. Only the process this object
 * started is ever killed. Not thread-safe.
 */
public final class ServiceProcess implements AutoCloseable {

  private final Path jar;
  private final Path log;
  private final int port;
  private final List<String> arguments;
  private Process process;
  private int kills;

  /**
   * @param jar the notes service jar
   * @param log where its output goes (appended across restarts)
   * @param datasourceUrl its {@code spring.datasource.url}
   * @param arguments more Spring Boot arguments, such as {@code --idem.mode=lease}
   */
  public ServiceProcess(Path jar, Path log, String datasourceUrl, List<String> arguments) {
    this.jar = Objects.requireNonNull(jar, "jar");
    this.log = Objects.requireNonNull(log, "log");
    this.port = Ports.free();
    List<String> args = new ArrayList<>(List.of(
        "--server.port=" + port,
        "--server.address=127.0.0.1",
        "--spring.datasource.url=" + datasourceUrl,
        // a connection the proxy cut or a killed database is noticed at once, and replaced
        "--spring.datasource.hikari.connection-timeout=3000",
        "--spring.datasource.hikari.validation-timeout=1000",
        "--logging.level.root=WARN"));
    args.addAll(arguments);
    this.arguments = List.copyOf(args);
  }

  /** @return the base URI, for example {@code http://127.0.0.1:41234} */
  public URI base() {
    return URI.create("http://127.0.0.1:" + port);
  }

  /**
   * Starts the process and waits until {@code GET /notes/0} answers 404 (the service is up and reads its database).
   *
   * @throws IOException if it exits or does not answer within 120 seconds
   * @throws InterruptedException if interrupted
   */
  public void start() throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k", "-Xmx256m",
        "-jar", jar.toString()));
    command.addAll(arguments);
    Files.createDirectories(log.getParent());
    process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("the notes service exited with " + process.exitValue() + "; its log: " + log + "\n" + PostgresInstance.tail(log));
      }
      try {
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(base().resolve("/notes/0")).timeout(Duration.ofSeconds(2)).build(),
            HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() == 404 && process.isAlive()) {
          return;
        }
      } catch (IOException notYet) {
        // still starting
      }
      Thread.sleep(200);
    }
    process.destroyForcibly();
    throw new IOException("the notes service did not answer within 120 s; its log: " + log);
  }

  /**
   * Kills the process with SIGKILL and waits for it to end.
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
}
