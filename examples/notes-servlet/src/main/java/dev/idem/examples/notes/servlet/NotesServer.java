package dev.idem.examples.notes.servlet;

import dev.idem.core.IdemListener;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import jakarta.servlet.DispatcherType;
import java.sql.Connection;
import java.util.EnumSet;
import java.util.Objects;
import javax.sql.DataSource;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.postgresql.ds.PGSimpleDataSource;
import org.sqlite.SQLiteDataSource;

/**
 * The notes service without Spring: an embedded Jetty with {@link IdempotencyFilter} in
 * transactional mode on plain JDBC, in front of {@link NotesServlet}. Everything Idem needs is
 * wired here, in a few lines:
 *
 * <pre>{@code
 * JdbcIdempotency keys = JdbcIdempotency.builder().build();          // the idem_keys table
 * IdempotencyEngine engine = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
 * IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(engine)
 *     .route("POST", "/notes", KeyRequirement.REQUIRED).build();
 * context.addFilter(new FilterHolder(new IdempotencyFilter(config)), "/*", EnumSet.of(DispatcherType.REQUEST));
 * }</pre>
 *
 * <p>Run it with {@code java ... dev.idem.examples.notes.servlet.NotesServer [jdbc-url [port]]};
 * the default is an SQLite file {@code notes-servlet.db} in the working directory (not the Spring
 * notes service's {@code notes.db}, so that the two never share notes or keys), on port 8080.
 */
public final class NotesServer implements AutoCloseable {

  /** The default database: an SQLite file in the working directory, WAL, a 10 s busy timeout. */
  public static final String DEFAULT_URL = "jdbc:sqlite:notes-servlet.db?journal_mode=WAL&busy_timeout=10000";

  private final DataSource dataSource;
  private final Server server;
  private final ServerConnector connector;

  private NotesServer(DataSource dataSource, Server server, ServerConnector connector) {
    this.dataSource = dataSource;
    this.server = server;
    this.connector = connector;
  }

  /**
   * Creates the tables if missing and starts the server.
   *
   * @param jdbcUrl an SQLite ({@code jdbc:sqlite:...}) or PostgreSQL ({@code
   *     jdbc:postgresql://...?user=...}) URL, never {@code null}
   * @param port the port on 127.0.0.1, or 0 for any free one
   * @return the running server; {@link #close()} stops it
   * @throws IllegalArgumentException if the URL is of another database
   * @throws Exception if the database cannot be reached or the server cannot start
   */
  public static NotesServer start(String jdbcUrl, int port) throws Exception {
    DataSource dataSource = dataSource(Objects.requireNonNull(jdbcUrl, "jdbcUrl"));
    JdbcIdempotency keys = JdbcIdempotency.builder().build();
    try (Connection c = dataSource.getConnection()) {
      NoteTable.create(c);
      keys.createSchema(c);
    }
    TransactionalIdempotency engine = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(engine)
        .route("POST", "/notes", KeyRequirement.REQUIRED)
        .build();

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(port);
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler("/");
    context.addFilter(new FilterHolder(new IdempotencyFilter(config)), "/*", EnumSet.of(DispatcherType.REQUEST));
    context.addServlet(new ServletHolder(new NotesServlet(dataSource)), "/notes/*");
    server.setHandler(context);
    server.start();
    return new NotesServer(dataSource, server, connector);
  }

  private static DataSource dataSource(String url) {
    if (url.startsWith("jdbc:sqlite:")) {
      SQLiteDataSource sqlite = new SQLiteDataSource();
      sqlite.setUrl(url);
      return sqlite;
    }
    if (url.startsWith("jdbc:postgresql:")) {
      PGSimpleDataSource postgres = new PGSimpleDataSource();
      postgres.setURL(url);
      return postgres;
    }
    throw new IllegalArgumentException("the notes service runs on SQLite (jdbc:sqlite:...) or PostgreSQL (jdbc:postgresql:...), not " + url);
  }

  /** @return the port the server listens on */
  public int port() {
    return connector.getLocalPort();
  }

  /** @return the service's DataSource (connections in auto-commit mode, one per call) */
  public DataSource dataSource() {
    return dataSource;
  }

  /** Stops the server; idempotent. */
  @Override
  public void close() throws Exception {
    server.stop();
  }

  /**
   * @param args an optional JDBC URL (default {@value #DEFAULT_URL}) and port (default 8080)
   * @throws Exception if the service cannot start
   */
  public static void main(String[] args) throws Exception {
    String url = args.length > 0 ? args[0] : DEFAULT_URL;
    int port = args.length > 1 ? Integer.parseInt(args[1]) : 8080;
    NotesServer notes = start(url, port);
    System.out.println("notes service on http://127.0.0.1:" + notes.port() + "/notes (" + url + ")");
    notes.server.join();
  }
}
