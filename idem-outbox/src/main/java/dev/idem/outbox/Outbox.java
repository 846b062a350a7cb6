package dev.idem.outbox;

import dev.idem.core.IdemStoreException;
import dev.idem.core.Effect;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.SchemaCreation;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The transactional outbox: outgoing intents (RabbitMQ and JetStream messages, HTTP requests)
 * recorded in a table <em>in the same transaction</em> as the effect and its idempotency key, and
 * delivered later, at least once, by an {@link OutboxRelay}.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.builder().build();          // table idem_outbox
 * outbox.createSchema(dataSource);                    // once, at start-up (or your migrations)
 * Outcome outcome = idempotency.execute(connection, request, outbox.effect(request, (c, intents) -> {
 *   insertOrder(c, order);
 *   intents.add(Intent.rabbitMq("orders", "order.created", json));
 *   return StoredResponse.of(201, json);
 * }));
 * }</pre>
 *
 * <p>What it guarantees, with {@link dev.idem.jdbc.JdbcIdempotency}: the intents commit with the
 * effect and the stored response, or roll back with them; a replay does not run the effect, so it
 * records nothing; each intent's id is {@link IntentId#of}(scope, key, position), and the table's
 * primary key on it refuses a second row with the same id. Sending inside the request instead, then
 * retrying, sends twice; the outbox sends once per intent, and re-sends (at least once) with the same
 * id, which the receiver can recognise.
 *
 * <p>Dialects: SQLite 3.35+, PostgreSQL 11+, MySQL 8 and MariaDB 10.5+ (claims use {@code FOR
 * UPDATE SKIP LOCKED} on MariaDB 10.6+ and MySQL 8; a plain locking read before). Every time is
 * the database's clock. On MySQL and MariaDB the identifying columns are {@code VARBINARY}, so ids,
 * principals, operations, keys and lease owners compare byte for byte.
 *
 * <p>Immutable and thread-safe; share one per table. Connections are used by one thread at a time.
 */
public final class Outbox {

  /** The table name used when none is given, and in the shipped schema files. */
  public static final String DEFAULT_TABLE = "idem_outbox";

  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}");

  private final String table;
  /** The statements per dialect, made at the first use of each. */
  private final Map<Dialect, OutboxSql> statements = new ConcurrentHashMap<>();

  private final TraceContextPropagation tracing;

  private Outbox(Builder b) {
    this.table = b.table;
    this.tracing = b.tracing;
  }

  /** @return what gives the trace context stored with each intent ({@link Builder#tracing}) */
  TraceContextPropagation tracing() {
    return tracing;
  }

  /** @return a builder with the default table {@value #DEFAULT_TABLE} */
  public static Builder builder() {
    return new Builder();
  }

  /** @return the outbox table's name */
  public String table() {
    return table;
  }

  /**
   * @param dialect a dialect
   * @return the class-path resource of that dialect's schema file, with the table named {@value
   *     #DEFAULT_TABLE}, for example {@code /dev/idem/outbox/schema/postgresql.sql}
   */
  public static String schemaResource(Dialect dialect) {
    return "/dev/idem/outbox/schema/" + dialect.name().toLowerCase(Locale.ROOT) + ".sql";
  }

  /**
   * Creates the table and its index if they do not exist ({@code CREATE ... IF NOT EXISTS}), and
   * commits them. Call it at start-up, outside any transaction: DDL commits implicitly on MySQL and
   * MariaDB. Safe when several processes (or threads, each on its own connection) create the same
   * table at the same moment: each table and index is made once and no caller fails because another
   * made it first ({@link SchemaCreation}: an advisory lock on PostgreSQL, a named lock on MySQL and
   * MariaDB, the write lock and a busy wait on SQLite). Thread-safe.
   *
   * @param connection an open connection in auto-commit mode, back in it when this returns
   * @throws IllegalStateException if the connection is inside a transaction
   * @throws IdemStoreException if the database refuses the statements, or another creator held the
   *     table's schema lock for longer than {@link SchemaCreation#LOCK_WAIT}
   */
  public void createSchema(Connection connection) {
    Objects.requireNonNull(connection, "connection");
    try {
      if (!connection.getAutoCommit()) {
        throw new IllegalStateException("create the outbox table outside a transaction (auto-commit mode)");
      }
      SchemaCreation.run(connection, table, schemaStatements(Dialect.of(connection)));
    } catch (SQLException e) {
      throw failure("cannot create the outbox table", e);
    }
  }

  /**
   * As {@link #createSchema(Connection)}, on a connection borrowed from {@code dataSource} and
   * switched to auto-commit mode (a pool may hand it out with auto-commit off).
   */
  public void createSchema(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      createSchema(c);
    } catch (SQLException e) {
      throw failure("cannot get a connection", e);
    }
  }

  /**
   * @param dialect a dialect
   * @return the statements that create this outbox's table on it, in order
   */
  public List<String> schemaStatements(Dialect dialect) {
    String resource = schemaResource(dialect);
    String sql;
    try (InputStream in = Outbox.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("schema resource not found: " + resource);
      }
      sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String body = sql.lines().filter(l -> !l.strip().startsWith("--")).collect(Collectors.joining("\n"));
    body = body.replaceAll("\\bidem_outbox", table);
    List<String> out = new ArrayList<>();
    for (String s : body.split(";")) {
      if (!s.isBlank()) {
        out.add(s.strip());
      }
    }
    return out;
  }

  /**
   * Wraps an effect that records intents into an {@link Effect} for transactional mode ({@link
   * dev.idem.jdbc.JdbcIdempotency#execute}, {@link dev.idem.jdbc.TransactionalIdempotency}): it
   * runs on the transaction's {@link dev.idem.core.EffectContext#connection()}. Each run of the effect gets a fresh {@link
   * IntentWriter}, numbering its intents from 0: a run that the database rolled back and Idem runs
   * again names its intents as the first run did.
   *
   * @param request the operation's request: its scope and key name the intents; never {@code null}
   * @param effect the effect, never {@code null}
   * @return the effect to pass to the engine with the same {@code request}; in lease mode, where
   *     there is no transaction, it throws {@link IllegalStateException}
   */
  public Effect effect(IdempotentRequest request, OutboxEffect effect) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    return context -> {
      Connection connection = context.connection();
      try (IntentWriter intents = writer(connection, request)) {
        return effect.apply(connection, intents);
      }
    };
  }

  /**
   * A writer for a transaction the caller manages (for example a Spring transaction that also
   * runs {@code JdbcIdempotency.execute}).
   *
   * @param connection the transaction's connection, not in auto-commit mode
   * @param request the operation whose intents these are
   * @return a writer numbering intents from 0
   * @throws IllegalStateException if the connection is in auto-commit mode: each intent would
   *     commit on its own, apart from the effect
   */
  public IntentWriter writer(Connection connection, IdempotentRequest request) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(request, "request");
    try {
      if (connection.getAutoCommit()) {
        throw new IllegalStateException(
            "intents must be recorded inside the effect's transaction; the connection is in auto-commit mode");
      }
    } catch (SQLException e) {
      throw failure("cannot read the auto-commit mode", e);
    }
    return new IntentWriter(this, connection, request);
  }

  /**
   * @return the entry with this id, if any
   * @throws IdemStoreException if the database fails
   */
  public Optional<OutboxEntry> find(Connection connection, String id) {
    List<OutboxEntry> found = query(connection, sql(connection).byId, ps -> ps.setString(1, id));
    return found.isEmpty() ? Optional.empty() : Optional.of(found.get(0));
  }

  /**
   * @return the intents the operation (scope and key of {@code request}) recorded, by position;
   *     empty when it recorded none or they were purged
   * @throws IdemStoreException if the database fails
   */
  public List<OutboxEntry> intentsOf(Connection connection, IdempotentRequest request) {
    return query(connection, sql(connection).byOperation, ps -> {
      ps.setString(1, request.scope().principal());
      ps.setString(2, request.scope().operation());
      ps.setString(3, request.key().value());
    });
  }

  /**
   * @param limit the most entries to return, from 1
   * @return the {@link OutboxEntry.State#DEAD} entries, oldest first, each with its reason in
   *     {@link OutboxEntry#lastError()}
   * @throws IdemStoreException if the database fails
   */
  public List<OutboxEntry> dead(Connection connection, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be at least 1");
    }
    return query(connection, sql(connection).dead, ps -> ps.setInt(1, limit));
  }

  /**
   * Puts a dead intent back to pending, due at once, with its attempts reset to 0; its last error
   * stays until the next attempt. Run it after fixing what made it fail. Runs in its own statement
   * (auto-commit) or in the caller's transaction.
   *
   * @return {@code true} if the intent was dead and is now pending; {@code false} if there is no
   *     dead intent with this id (unknown, pending, sent, or retried already)
   * @throws IdemStoreException if the database fails
   */
  public boolean retry(Connection connection, String id) {
    Objects.requireNonNull(id, "id");
    try (PreparedStatement ps = connection.prepareStatement(sql(connection).retry)) {
      ps.setString(1, id);
      return ps.executeUpdate() == 1;
    } catch (SQLException e) {
      throw failure("cannot retry intent " + id, e);
    }
  }

  /**
   * @return how many entries are in each state (states with none are 0)
   * @throws IdemStoreException if the database fails
   */
  public Map<OutboxEntry.State, Long> counts(Connection connection) {
    Map<OutboxEntry.State, Long> counts = new EnumMap<>(OutboxEntry.State.class);
    for (OutboxEntry.State s : OutboxEntry.State.values()) {
      counts.put(s, 0L);
    }
    try (Statement st = connection.createStatement();
        ResultSet rs = st.executeQuery(sql(connection).counts)) {
      while (rs.next()) {
        counts.put(OutboxEntry.State.valueOf(rs.getString(1)), rs.getLong(2));
      }
      return counts;
    } catch (SQLException e) {
      throw failure("cannot count the outbox", e);
    }
  }

  /**
   * Deletes sent intents older than {@code age} (by their send time). Keep them at least as long as
   * the idempotency keys' retention: while a key is live its operation replays and records nothing,
   * and a sent row still guards its id.
   *
   * @param age from 0
   * @return how many rows were deleted
   * @throws IdemStoreException if the database fails
   */
  public int purgeSent(Connection connection, Duration age) {
    if (age.isNegative()) {
      throw new IllegalArgumentException("age must not be negative");
    }
    try (PreparedStatement ps = connection.prepareStatement(sql(connection).purge)) {
      ps.setLong(1, age.toMillis());
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw failure("cannot purge sent intents", e);
    }
  }

  // ---- used by IntentWriter and OutboxRelay ----

  OutboxSql sql(Connection connection) {
    return statements(Dialect.of(connection));
  }

  private OutboxSql statements(Dialect dialect) {
    return statements.computeIfAbsent(dialect, d -> new OutboxSql(d, table));
  }

  void insert(PreparedStatement ps, String id, IdempotentRequest request, int position, Intent intent) throws SQLException {
    ps.setString(1, id);
    ps.setString(2, request.scope().principal());
    ps.setString(3, request.scope().operation());
    ps.setString(4, request.key().value());
    ps.setInt(5, position);
    ps.setString(6, intent.kind().name());
    ps.setString(7, intent.target());
    ps.setString(8, intent.route());
    ps.setBytes(9, intent.encodedHeaders());
    ps.setBytes(10, intent.bodyShared());
    try {
      ps.executeUpdate();
    } catch (SQLException e) {
      // sqlite-jdbc reports no SQLState: the rethrown failure has the class-23 state on every database
      if (Dialect.of(ps.getConnection()).isDuplicateKey(e)) {
        throw new SQLException(
            "intent " + id + " (position " + position + " of key '" + request.key().value() + "' in " + request.scope()
                + ") is already in " + table + ": the operation ran again while its earlier intents are kept"
                + " (the key was reused after its retention, or a racing duplicate lost); " + e.getMessage(),
            e.getSQLState() != null ? e.getSQLState() : "23000", e.getErrorCode(), e);
      }
      throw e;
    }
  }

  /**
   * Claims up to {@code limit} due intents of the given kinds for {@code owner}: each gets its
   * attempts counted and becomes due again only after {@code lease}, so a relay that stops leaves
   * them to another once the lease ends. Runs in its own transaction.
   */
  List<OutboxEntry> claim(Connection c, String owner, Duration lease, int limit, Set<Intent.Kind> kinds) throws SQLException {
    Dialect dialect = Dialect.of(c);
    OutboxSql sql = statements(dialect);
    String kindList = kinds.stream().map(k -> "'" + k.name() + "'").sorted().collect(Collectors.joining(", "));
    String lock = dialect.lockSkippingLocked(c);
    List<OutboxEntry> claimed;
    if (sql.claimReturning == null) {
      // No UPDATE ... RETURNING (MySQL, MariaDB, H2): the due rows are selected under a lock, then leased by id.
      claimed = inTransaction(c, dialect, () -> {
        List<OutboxEntry> rows = new ArrayList<>();
        String select = sql.dueSelect.replace("#KINDS#", kindList) + lock;
        try (PreparedStatement ps = c.prepareStatement(select)) {
          ps.setInt(1, limit);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              rows.add(read(rs, 1));
            }
          }
        }
        if (rows.isEmpty()) {
          return rows;
        }
        String ids = rows.stream().map(r -> "?").collect(Collectors.joining(", "));
        try (PreparedStatement ps = c.prepareStatement(sql.leaseByIds + " (" + ids + ")")) {
          ps.setString(1, owner);
          ps.setLong(2, lease.toMillis());
          for (int i = 0; i < rows.size(); i++) {
            ps.setString(3 + i, rows.get(i).id());
          }
          ps.executeUpdate();
        }
        return rows;
      });
    } else {
      claimed = inTransaction(c, dialect, () -> {
        List<OutboxEntry> rows = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql.claimReturning.replace("#KINDS#", kindList).replace("#LOCK#", lock))) {
          ps.setString(1, owner);
          ps.setLong(2, lease.toMillis());
          ps.setInt(3, limit);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              rows.add(read(rs, 0));
            }
          }
        }
        return rows;
      });
    }
    claimed.sort(Comparator.comparingLong(OutboxEntry::createdAtMillis)
        .thenComparing(e -> e.scope().principal())
        .thenComparing(e -> e.scope().operation())
        .thenComparing(OutboxEntry::key)
        .thenComparingInt(OutboxEntry::position));
    return claimed;
  }

  /** Marks intents sent, each only if {@code owner} still holds it. @return how many it held */
  int markSent(Connection c, String owner, List<String> ids) throws SQLException {
    if (ids.isEmpty()) {
      return 0;
    }
    Dialect dialect = Dialect.of(c);
    OutboxSql sql = statements(dialect);
    return inTransaction(c, dialect, () -> {
      int held = 0;
      try (PreparedStatement ps = c.prepareStatement(sql.markSent)) {
        for (String id : ids) {
          ps.setString(1, id);
          ps.setString(2, owner);
          held += ps.executeUpdate();
        }
      }
      return held;
    });
  }

  /**
   * Records a failed attempt: back to pending after {@code delay}, or dead; only if {@code owner}
   * still holds the intent. @return whether it did
   */
  boolean markFailed(Connection c, String owner, String id, boolean dead, Duration delay, @Nullable String reason)
      throws SQLException {
    Dialect dialect = Dialect.of(c);
    OutboxSql sql = statements(dialect);
    return inTransaction(c, dialect, () -> {
      try (PreparedStatement ps = c.prepareStatement(sql.markFailed)) {
        ps.setString(1, dead ? "DEAD" : "PENDING");
        ps.setLong(2, delay.toMillis());
        ps.setString(3, truncate(reason));
        ps.setString(4, id);
        ps.setString(5, owner);
        return ps.executeUpdate() == 1;
      }
    });
  }

  private static String truncate(@Nullable String reason) {
    String r = reason == null ? "unknown failure" : reason;
    return r.length() <= 2000 ? r : r.substring(0, 1997) + "...";
  }

  @FunctionalInterface
  private interface Work<T> {
    T run() throws SQLException;
  }

  /** Runs {@code work} in a transaction of its own on a connection in auto-commit mode. */
  private static <T> T inTransaction(Connection c, Dialect dialect, Work<T> work) throws SQLException {
    if (!c.getAutoCommit()) {
      return work.run(); // the caller's transaction
    }
    String begin = dialect.beginStatement();
    boolean byStatement = begin != null;
    if (byStatement) {
      try (Statement st = c.createStatement()) {
        st.execute(begin);
      }
    } else {
      c.setAutoCommit(false);
    }
    boolean done = false;
    try {
      T result = work.run();
      if (byStatement) {
        try (Statement st = c.createStatement()) {
          st.execute("COMMIT");
        }
      } else {
        c.commit();
      }
      done = true;
      return result;
    } finally {
      if (!done) {
        try {
          if (byStatement) {
            try (Statement st = c.createStatement()) {
              st.execute("ROLLBACK");
            }
          } else {
            c.rollback();
          }
        } catch (SQLException ignored) {
          // the first failure is the one to report; a broken connection rolls back anyway
        }
      }
      if (!byStatement) {
        try {
          c.setAutoCommit(true);
        } catch (SQLException ignored) {
          // broken connection: the pool discards it
        }
      }
    }
  }

  @FunctionalInterface
  private interface Binder {
    void bind(PreparedStatement ps) throws SQLException;
  }

  private List<OutboxEntry> query(Connection connection, String sql, Binder binder) {
    try (PreparedStatement ps = connection.prepareStatement(sql)) {
      binder.bind(ps);
      List<OutboxEntry> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(read(rs, 0));
        }
      }
      return out;
    } catch (SQLException e) {
      throw failure("cannot read the outbox", e);
    }
  }

  /** Reads the {@link OutboxSql#COLUMNS}; {@code extraAttempts} is added to the attempts read. */
  private static OutboxEntry read(ResultSet rs, int extraAttempts) throws SQLException {
    Intent.Kind kind = Intent.Kind.valueOf(rs.getString(6));
    Intent intent = Intent.restore(kind, rs.getString(7), rs.getString(8), Intent.decodeHeaders(rs.getBytes(9)), rs.getBytes(10));
    return new OutboxEntry(
        rs.getString(1), Scope.of(rs.getString(2), rs.getString(3)), rs.getString(4), rs.getInt(5), intent,
        OutboxEntry.State.valueOf(rs.getString(11)), rs.getInt(12) + extraAttempts, rs.getString(13), rs.getLong(14));
  }

  private IdemStoreException failure(String what, SQLException e) {
    return new IdemStoreException(
        "outbox (" + table + "): " + what + ": " + e.getMessage() + " [SQLState " + e.getSQLState() + "]", e);
  }

  /** Builds an {@link Outbox}. Not thread-safe; setters validate eagerly. */
  public static final class Builder {
    private String table = DEFAULT_TABLE;
    private TraceContextPropagation tracing = TraceContextPropagation.NONE;

    private Builder() {}

    /**
     * @param tracing gives the trace context current when an intent is added ({@link
     *     IntentWriter#add}), stored with the intent as headers ({@code traceparent}, {@code
     *     tracestate}) that every transport sends with the message, so that a consumer built with
     *     the same propagation ({@link dev.idem.consumer.IdempotentConsumer.Builder#tracing})
     *     handles it in the request's trace; a header the intent already has is kept. Default
     *     {@link TraceContextPropagation#NONE}, never {@code null}
     */
    public Builder tracing(TraceContextPropagation tracing) {
      this.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /**
     * @param table a plain SQL identifier of at most 48 characters ({@code [A-Za-z_][A-Za-z0-9_]*})
     * @throws IllegalArgumentException if it is not
     */
    public Builder table(String table) {
      Objects.requireNonNull(table, "table");
      if (!IDENTIFIER.matcher(table).matches()) {
        throw new IllegalArgumentException(
            "table must be a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 48 characters), was '" + table + "'");
      }
      this.table = table;
      return this;
    }

    /** @return a new, thread-safe outbox */
    public Outbox build() {
      return new Outbox(this);
    }
  }
}
