package dev.idem.cli;

import dev.idem.lab.HttpLab;
import dev.idem.lab.NotesServiceProcess;
import dev.idem.lab.PostgresDatabase;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Starts two notes services from their jar (one with Idem, one with {@code idem.enabled=false}),
 * runs {@link HttpLab} against them, and stops them: the Spring MVC service each on its own SQLite
 * file, or the WebFlux service each on a PostgreSQL database of its own, created on {@code server}
 * before and dropped after. Not thread-safe.
 */
final class HttpLabRunner implements AutoCloseable {

  /** The notes service the lab runs. */
  enum Stack {
    /** {@code examples/notes-service}: Spring MVC, JDBC, SQLite files. */
    SERVLET,
    /** {@code examples/notes-webflux}: Spring WebFlux on Reactor Netty, R2DBC, PostgreSQL. */
    WEBFLUX
  }

  private final Path jar;
  private final Stack stack;
  private final String server;
  private final PrintWriter err;
  private final Path dir;
  private PostgresDatabase protectedDb;
  private PostgresDatabase unprotectedDb;
  private NotesServiceProcess withIdem;
  private NotesServiceProcess withoutIdem;

  /**
   * @param server for {@link Stack#WEBFLUX}, the JDBC URL of the PostgreSQL server on which the
   *     services' databases are created; unused for {@link Stack#SERVLET}
   */
  HttpLabRunner(Path jar, Stack stack, String server, PrintWriter err) throws IOException {
    this.jar = jar;
    this.stack = stack;
    this.server = server;
    this.err = err;
    this.dir = Files.createTempDirectory("idem-http-lab-");
  }

  /**
   * @throws IOException if a service cannot be started
   * @throws SQLException if a service's PostgreSQL database cannot be created
   */
  List<HttpLab.Row> run() throws IOException, InterruptedException, SQLException {
    if (stack == Stack.WEBFLUX) {
      protectedDb = PostgresDatabase.create(server, "idem_http_lab");
      unprotectedDb = PostgresDatabase.create(server, "idem_http_lab");
      withIdem = NotesServiceProcess.startWebFlux(jar, dir, "protected", true, protectedDb.jdbcUrl(), List.of());
      withoutIdem = NotesServiceProcess.startWebFlux(jar, dir, "unprotected", false, unprotectedDb.jdbcUrl(), List.of());
    } else {
      withIdem = NotesServiceProcess.start(jar, dir, "protected", true);
      withoutIdem = NotesServiceProcess.start(jar, dir, "unprotected", false);
    }
    return new HttpLab(withIdem.base(), withoutIdem.base()).run();
  }

  @Override
  public void close() {
    if (withIdem != null) {
      withIdem.close();
    }
    if (withoutIdem != null) {
      withoutIdem.close();
    }
    for (PostgresDatabase db : new PostgresDatabase[] {protectedDb, unprotectedDb}) {
      if (db != null) {
        try {
          db.close();
        } catch (SQLException e) {
          err.println("idem lab: could not drop the database " + db.name() + ": " + e.getMessage());
        }
      }
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      err.println("idem lab: could not remove " + dir + ": " + e.getMessage());
    }
  }
}
