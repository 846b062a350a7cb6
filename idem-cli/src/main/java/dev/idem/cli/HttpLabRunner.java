package dev.idem.cli;

import dev.idem.testkit.lab.HttpLab;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Starts two notes services from their jar (one with Idem, one with {@code idem.enabled=false}),
 * each on its own SQLite file, runs {@link HttpLab} against them, and stops them. Not thread-safe.
 */
final class HttpLabRunner implements AutoCloseable {

  private final Path jar;
  private final PrintWriter err;
  private final List<Process> processes = new ArrayList<>();
  private final Path dir;

  HttpLabRunner(Path jar, PrintWriter err) throws IOException {
    this.jar = jar;
    this.err = err;
    this.dir = Files.createTempDirectory("idem-http-lab-");
  }

  List<HttpLab.Row> run() throws IOException, InterruptedException {
    URI withIdem = start("protected", true);
    URI withoutIdem = start("unprotected", false);
    return new HttpLab(withIdem, withoutIdem).run();
  }

  private URI start(String name, boolean idem) throws IOException, InterruptedException {
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    Path log = dir.resolve(name + ".log");
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-jar", jar.toString(),
        "--server.port=" + port,
        "--server.address=127.0.0.1",
        "--spring.datasource.url=jdbc:sqlite:" + dir.resolve(name + ".db") + "?journal_mode=WAL&busy_timeout=10000",
        "--idem.enabled=" + idem));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    processes.add(p);
    URI base = URI.create("http://127.0.0.1:" + port);
    HttpClient http = HttpClient.newHttpClient();
    long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
    while (System.nanoTime() < deadline) {
      if (!p.isAlive()) {
        throw new IOException("the notes service (" + name + ") exited with " + p.exitValue() + "; its log: " + log);
      }
      try {
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(base.resolve("/notes")).timeout(Duration.ofSeconds(2)).build(),
            HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() == 200) {
          return base;
        }
      } catch (IOException notYet) {
        // still starting
      }
      Thread.sleep(250);
    }
    throw new IOException("the notes service (" + name + ") did not answer within 90 s; its log: " + log);
  }

  @Override
  public void close() {
    for (Process p : processes) {
      p.destroy();
    }
    for (Process p : processes) {
      try {
        if (!p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        p.destroyForcibly();
      }
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      err.println("idem lab: could not remove " + dir + ": " + e.getMessage());
    }
  }
}
