package dev.idem.lab;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLDecoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The notes service ({@code examples/notes-service}) started from its jar as a child process on
 * 127.0.0.1, on a free port and an SQLite file of its own (or the WebFlux notes service, {@code
 * examples/notes-webflux}, on a PostgreSQL database through R2DBC: {@link #startWebFlux}) (WAL, {@code synchronous=NORMAL}, as the
 * store benchmarks use it: no fsync per commit, so a measurement shows the service's own work rather
 * than the disk's latency), for the HTTP lab and the HTTP benchmark. {@link #close()} stops it. Not
 * thread-safe.
 */
public final class NotesServiceProcess implements AutoCloseable {

  private final Process process;
  private final URI base;
  private final Path log;

  private NotesServiceProcess(Process process, URI base, Path log) {
    this.process = process;
    this.base = base;
    this.log = log;
  }

  /**
   * Starts the service and waits until {@code GET /notes} answers 200 from this very process.
   *
   * @param jar the notes service jar
   * @param dir where its database and log go
   * @param name a name for its files, for example {@code protected}
   * @param idem whether Idem is enabled ({@code idem.enabled})
   * @return the running service
   * @throws IOException if it exits or does not answer within 90 seconds (the message names its log)
   * @throws InterruptedException if interrupted while waiting
   */
  public static NotesServiceProcess start(Path jar, Path dir, String name, boolean idem) throws IOException, InterruptedException {
    return start(jar, dir, name, idem, List.of());
  }

  /**
   * As {@link #start(Path, Path, String, boolean)}, with more Spring Boot arguments.
   *
   * @param arguments more command-line arguments, such as {@code --idem.mode=lease}; never {@code null}
   */
  public static NotesServiceProcess start(Path jar, Path dir, String name, boolean idem, List<String> arguments)
      throws IOException, InterruptedException {
    return start(jar, dir, name, idem,
        "jdbc:sqlite:" + dir.resolve(name + ".db") + "?journal_mode=WAL&synchronous=NORMAL&busy_timeout=10000", arguments);
  }

  /**
   * As {@link #start(Path, Path, String, boolean, List)}, on another database.
   *
   * @param datasourceUrl the service's {@code spring.datasource.url}, such as a PostgreSQL database
   *     of its own (the database must exist; the service creates its tables)
   */
  public static NotesServiceProcess start(Path jar, Path dir, String name, boolean idem, String datasourceUrl,
      List<String> arguments) throws IOException, InterruptedException {
    Objects.requireNonNull(datasourceUrl, "datasourceUrl");
    List<String> all = new ArrayList<>();
    all.add("--spring.datasource.url=" + datasourceUrl);
    all.addAll(arguments);
    return startJar(jar, dir, name, idem, all);
  }

  /**
   * Starts the WebFlux notes service ({@code examples/notes-webflux}) on a PostgreSQL database
   * through R2DBC, and waits as {@link #start(Path, Path, String, boolean)} does.
   *
   * @param jar the WebFlux notes service jar
   * @param dir where its log goes
   * @param name a name for its log, for example {@code protected}
   * @param idem whether Idem is enabled ({@code idem.enabled})
   * @param postgresJdbcUrl the database, as a JDBC URL ({@code jdbc:postgresql://host:port/name?user=...});
   *     the service gets the same database through R2DBC ({@link #r2dbcProperties}). The database
   *     must exist; the service creates its tables
   * @param arguments more command-line arguments, such as {@code --idem.mode=lease}; never {@code null}
   * @return the running service
   * @throws IOException if it exits or does not answer within 90 seconds (the message names its log)
   * @throws InterruptedException if interrupted while waiting
   * @throws IllegalArgumentException if {@code postgresJdbcUrl} is not a PostgreSQL JDBC URL
   */
  public static NotesServiceProcess startWebFlux(Path jar, Path dir, String name, boolean idem, String postgresJdbcUrl,
      List<String> arguments) throws IOException, InterruptedException {
    List<String> all = new ArrayList<>();
    r2dbcProperties(postgresJdbcUrl).forEach((property, value) -> all.add("--" + property + "=" + value));
    all.addAll(arguments);
    return startJar(jar, dir, name, idem, all);
  }

  /**
   * Spring Boot's R2DBC properties for the database of a PostgreSQL JDBC URL: {@code
   * jdbc:postgresql://host:port/name?user=u&password=p} gives {@code spring.r2dbc.url=
   * r2dbc:postgresql://host:port/name}, {@code spring.r2dbc.username=u} (default {@code postgres})
   * and, when the URL has one, {@code spring.r2dbc.password=p}. Other parameters of the JDBC URL
   * are not carried over.
   *
   * @param postgresJdbcUrl a JDBC URL starting with {@code jdbc:postgresql://}
   * @return the properties, in that order; never {@code null}
   * @throws IllegalArgumentException if the URL does not start with {@code jdbc:postgresql://}
   */
  public static Map<String, String> r2dbcProperties(String postgresJdbcUrl) {
    String prefix = "jdbc:postgresql://";
    if (!postgresJdbcUrl.startsWith(prefix)) {
      throw new IllegalArgumentException("not a PostgreSQL JDBC URL (" + prefix + "...): " + Lab.redact(postgresJdbcUrl));
    }
    int query = postgresJdbcUrl.indexOf('?');
    Map<String, String> parameters = new LinkedHashMap<>();
    if (query >= 0) {
      for (String pair : postgresJdbcUrl.substring(query + 1).split("&")) {
        int eq = pair.indexOf('=');
        if (eq > 0) {
          parameters.put(pair.substring(0, eq), URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
        }
      }
    }
    Map<String, String> properties = new LinkedHashMap<>();
    properties.put("spring.r2dbc.url", "r2dbc:" + postgresJdbcUrl.substring("jdbc:".length(), query < 0 ? postgresJdbcUrl.length() : query));
    properties.put("spring.r2dbc.username", parameters.getOrDefault("user", "postgres"));
    if (parameters.containsKey("password")) {
      properties.put("spring.r2dbc.password", parameters.get("password"));
    }
    return properties;
  }

  private static NotesServiceProcess startJar(Path jar, Path dir, String name, boolean idem, List<String> arguments)
      throws IOException, InterruptedException {
    Objects.requireNonNull(jar, "jar");
    Objects.requireNonNull(arguments, "arguments");
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    Files.createDirectories(dir);
    Path log = dir.resolve(name + ".log");
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-jar", jar.toString(),
        "--server.port=" + port,
        "--server.address=127.0.0.1",
        "--idem.enabled=" + idem));
    command.addAll(arguments);
    Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    NotesServiceProcess service = new NotesServiceProcess(p, URI.create("http://127.0.0.1:" + port), log);
    try {
      service.awaitReady(name);
      return service;
    } catch (IOException | InterruptedException | RuntimeException e) {
      service.close();
      throw e;
    }
  }

  private void awaitReady(String name) throws IOException, InterruptedException {
    HttpClient http = HttpClient.newHttpClient();
    long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("the notes service (" + name + ") exited with " + process.exitValue() + "; its log: " + log);
      }
      try {
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(base.resolve("/notes")).timeout(Duration.ofSeconds(2)).build(),
            HttpResponse.BodyHandlers.discarding());
        // the process is alive and nothing else could bind the port while it holds it
        if (r.statusCode() == 200 && process.isAlive()) {
          return;
        }
      } catch (IOException notYet) {
        // still starting
      }
      Thread.sleep(250);
    }
    throw new IOException("the notes service (" + name + ") did not answer within 90 s; its log: " + log);
  }

  /** @return the service's base URI, for example {@code http://127.0.0.1:41234} */
  public URI base() {
    return base;
  }

  /** @return the operating system's id of the service's JVM process (the HTTP benchmark reads its CPU time) */
  public long pid() {
    return process.pid();
  }

  /** Stops the process, forcibly after 10 seconds. Idempotent. */
  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
