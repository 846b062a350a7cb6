package dev.idem.benchmarks;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HexFormat;
import java.util.UUID;

/**
 * Fills a running notes service's key table ({@code idem_keys}, the shipped schema) with many
 * records that look like its own, for the scale benchmarks ({@link ScaleLoad}, {@link PurgeLoad}).
 *
 * <p>One real create through the service gives the template: its principal, operation,
 * fingerprint, state and stored answer, the service's own bytes. The template is then copied with
 * the database's bulk path ({@code INSERT ... SELECT} over PostgreSQL's {@code generate_series},
 * MariaDB's sequence engine or an SQLite recursive CTE) under the keys of {@link #keyOf}: 36
 * characters, the MD5 of the row's number written as a UUID, so the load client can name any of
 * them. The indexes are dropped during the copy and rebuilt after it with the shipped names, then
 * the table is analyzed (PostgreSQL: {@code VACUUM ANALYZE} and {@code CHECKPOINT}, SQLite: {@code
 * ANALYZE} and a {@code wal_checkpoint(TRUNCATE)}, so the load's own write-back is not measured).
 *
 * <p>SQLite has no {@code md5()}: {@link #connect} registers one written in Java ({@code
 * org.sqlite.Function}, the MD5 of the argument's text as 32 lowercase hex digits), and the key is
 * spelled from it in SQL as on PostgreSQL. A function rather than keys computed in Java and bound in
 * batches: the copy stays one {@code INSERT ... SELECT} inside SQLite, like the other databases'
 * (no 10^7 rows of parameters through JDBC), and can be ordered by key. The shipped SQLite table is
 * {@code WITHOUT ROWID}: the primary key is the table's only B-tree and cannot be dropped, so only
 * {@code idem_keys_expires_at} is dropped and rebuilt, and the copy inserts in key order ({@code
 * ORDER BY} the key, sorted by SQLite's external sorter) so that the B-tree is filled from left to
 * right rather than at random places. The services may keep the file open meanwhile (WAL mode, as
 * the notes service opens it): idle connections hold no lock, and nothing else writes while the
 * copy's one transaction runs.
 *
 * <p>Not thread-safe with itself on one database; each call uses connections of its own.
 * A replay of a copied key sends {@link #TEMPLATE_TITLE}'s body and is answered with the
 * template's stored answer.
 */
final class KeyTableLoader {

  /** The retention the records are spread over: the service's default ({@code idem.retention}). */
  static final long RETENTION_MILLIS = Duration.ofHours(24).toMillis();

  /** The title of the template's request body, {@code {"title":"scale"}}, which every replay of a copied key sends. */
  static final String TEMPLATE_TITLE = "scale";

  /** The databases it can load. */
  enum Database { POSTGRES, MARIADB, SQLITE }

  private KeyTableLoader() {}

  /** @return the key of copied row {@code n}: the MD5 of its decimal number, as a UUID's 36 characters */
  static String keyOf(long n) {
    String h = HexFormat.of().formatHex(md5().digest(Long.toString(n).getBytes(StandardCharsets.US_ASCII)));
    return h.substring(0, 8) + "-" + h.substring(8, 12) + "-" + h.substring(12, 16) + "-" + h.substring(16, 20) + "-" + h.substring(20);
  }

  /**
   * @return the SQL expression that gives {@link #keyOf} of column {@code g}; on SQLite it needs a
   *     connection from {@link #connect}
   */
  static String keySql(Database db, String g) {
    return keyFromMd5(db, db == Database.POSTGRES ? "md5(" + g + "::text)" : "md5(" + g + ")");
  }

  /** @return the SQL expression that spells {@link #keyOf} from {@code md5}, an expression giving 32 lowercase hex digits */
  private static String keyFromMd5(Database db, String md5) {
    String parts = "substr(" + md5 + ",1,8),'-',substr(" + md5 + ",9,4),'-',substr(" + md5 + ",13,4),'-',substr(" + md5
        + ",17,4),'-',substr(" + md5 + ",21,12)";
    return db == Database.MARIADB ? "concat(" + parts + ")" : parts.replace(",'-',", "||'-'||");
  }

  /**
   * Opens a connection; on SQLite with {@code md5(x)} registered on it (the MD5 of {@code x}'s
   * text, as 32 lowercase hex digits; {@code NULL} for {@code NULL}), which {@link #keySql} uses.
   *
   * @param url the database's JDBC URL
   * @return a new connection, which the caller closes
   * @throws SQLException if it cannot be opened or the function cannot be registered
   */
  static Connection connect(Database db, String url) throws SQLException {
    Connection c = DriverManager.getConnection(url);
    if (db == Database.SQLITE) {
      try {
        org.sqlite.Function.create(c, "md5", new org.sqlite.Function() {
          @Override
          protected void xFunc() throws SQLException {
            String text = value_text(0);
            if (text == null) {
              result();
            } else {
              result(HexFormat.of().formatHex(md5().digest(text.getBytes(StandardCharsets.UTF_8))));
            }
          }
        }, 1, org.sqlite.Function.FLAG_DETERMINISTIC);
      } catch (SQLException | RuntimeException e) {
        c.close();
        throw e;
      }
    }
    return c;
  }

  private static MessageDigest md5() {
    try {
      return MessageDigest.getInstance("MD5");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("MD5 is part of every JDK", e);
    }
  }

  /**
   * Copies the service's record of a new create {@code rows} times, as rows {@code from} to {@code
   * from + rows - 1}, their expiries spread evenly from {@code expiresLast} (row {@code from}) down
   * to {@code expiresFirst}, each created one retention before its expiry.
   *
   * @param http a client for the template's create
   * @param base the service, running on {@code url}
   * @param url the service's database
   * @return how long the load took
   * @throws Exception if the template create or the load fails
   */
  static Duration load(Database db, HttpClient http, URI base, String url, long from, long rows, long expiresFirst,
      long expiresLast) throws Exception {
    return load(db, http, base, url, from, rows, expiresFirst, expiresLast, false);
  }

  /**
   * As {@link #load(Database, HttpClient, URI, String, long, long, long, long)}; with {@code
   * keepIndexes} the indexes stay and take every row as it comes, as a table that has served
   * traffic does (slower, and the indexes keep the shape that gives).
   */
  static Duration load(Database db, HttpClient http, URI base, String url, long from, long rows, long expiresFirst,
      long expiresLast, boolean keepIndexes) throws Exception {
    long start = System.nanoTime();
    String template = "scale-template-" + UUID.randomUUID();
    HttpLoad.send(http, base, "/notes", template, TEMPLATE_TITLE);
    copy(db, url, template, from, rows, expiresFirst, expiresLast, keepIndexes);
    return Duration.ofNanos(System.nanoTime() - start);
  }

  /**
   * The copy of {@link #load(Database, HttpClient, URI, String, long, long, long, long, boolean)}
   * once the template is stored.
   *
   * @param url the database, with the shipped key table and its indexes
   * @param template the key of the record to copy (the only record under that key)
   * @throws SQLException if the database refuses a step
   * @throws IllegalStateException if there is no record under {@code template}, or the copy wrote
   *     another number of rows than {@code rows}
   */
  static void copy(Database db, String url, String template, long from, long rows, long expiresFirst, long expiresLast,
      boolean keepIndexes) throws SQLException {
    try (Connection c = connect(db, url); Statement st = c.createStatement()) {
      Object[] t = new Object[8];
      int[] types = new int[t.length];
      try (PreparedStatement ps = c.prepareStatement("SELECT principal, operation, fingerprint, state, owner_token, lease_until,"
          + " status, response FROM idem_keys WHERE idem_key = ?")) {
        ps.setString(1, template);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            throw new IllegalStateException("the service stored no record for the template key " + template);
          }
          for (int i = 0; i < t.length; i++) {
            t[i] = rs.getObject(i + 1);
            types[i] = rs.getMetaData().getColumnType(i + 1);
          }
        }
      }
      String insert = "INSERT INTO idem_keys (principal, operation, idem_key, fingerprint, state, owner_token, lease_until, status,"
          + " response, created_at, expires_at) SELECT ?, ?, ";
      String last = Long.toString(from + rows - 1);
      String key;
      String g;
      String series;
      switch (db) {
        case POSTGRES -> {
          if (!keepIndexes) {
            st.execute("ALTER TABLE idem_keys DROP CONSTRAINT idem_keys_pkey");
            st.execute("DROP INDEX idem_keys_expires_at");
          }
          g = "g";
          key = keySql(db, g);
          series = " FROM generate_series(" + from + "::bigint, " + last + "::bigint) AS s(g)";
        }
        case MARIADB -> {
          if (!keepIndexes) {
            st.execute("ALTER TABLE idem_keys DROP PRIMARY KEY, DROP INDEX idem_keys_expires_at");
          }
          g = "s.seq";
          key = keySql(db, g);
          series = " FROM seq_" + from + "_to_" + last + " AS s";
        }
        default -> {
          if (!keepIndexes) {
            st.execute("DROP INDEX idem_keys_expires_at");
          }
          // the MD5 once a row: a recursive CTE is produced row by row, never inlined into the SELECT
          insert = "WITH RECURSIVE s(g, h) AS (SELECT " + from + ", md5(" + from + ") UNION ALL SELECT g + 1, md5(g + 1) FROM s"
              + " WHERE g < " + last + ") " + insert;
          g = "s.g";
          key = keyFromMd5(db, "s.h");
          series = " FROM s ORDER BY 3";
        }
      }
      String div = db == Database.MARIADB ? " DIV " : " / ";
      String expires = "(? - (" + g + " - ?) * ?" + div + "?)";
      try (PreparedStatement ps = c.prepareStatement(insert + key + ", ?, ?, ?, ?, ?, ?, " + expires + " - ?, " + expires + series)) {
        int i = 1;
        for (int k = 0; k < t.length; k++) {
          if (db == Database.SQLITE) {
            ps.setObject(i++, t[k]); // the driver's own mapping: its metadata types are not all accepted back by setObject
          } else if (t[k] == null) {
            ps.setNull(i++, types[k]);
          } else {
            ps.setObject(i++, t[k], types[k]);
          }
        }
        for (int k = 0; k < 2; k++) {
          ps.setLong(i++, expiresLast);
          ps.setLong(i++, from);
          ps.setLong(i++, expiresLast - expiresFirst);
          ps.setLong(i++, Math.max(1, rows - 1));
          if (k == 0) {
            ps.setLong(i++, RETENTION_MILLIS);
          }
        }
        long inserted = ps.executeLargeUpdate();
        if (inserted != rows) {
          throw new IllegalStateException("copied " + inserted + " rows, not " + rows);
        }
      }
      switch (db) {
        case POSTGRES -> {
          if (!keepIndexes) {
            st.execute("ALTER TABLE idem_keys ADD CONSTRAINT idem_keys_pkey PRIMARY KEY (principal, operation, idem_key)");
            st.execute("CREATE INDEX idem_keys_expires_at ON idem_keys (expires_at)");
          }
          st.execute("VACUUM ANALYZE idem_keys");
          st.execute("CHECKPOINT");
        }
        case MARIADB -> {
          if (!keepIndexes) {
            st.execute("ALTER TABLE idem_keys ADD PRIMARY KEY (principal, operation, idem_key), ADD INDEX idem_keys_expires_at (expires_at)");
          }
          st.execute("ANALYZE TABLE idem_keys");
        }
        default -> {
          if (!keepIndexes) {
            st.execute("CREATE INDEX idem_keys_expires_at ON idem_keys (expires_at)");
          }
          st.execute("ANALYZE idem_keys");
          st.execute("PRAGMA wal_checkpoint(TRUNCATE)");
        }
      }
    }
  }

  /**
   * Replays preloaded key {@code n} with the template's body.
   *
   * @param check whether a failure says the preloaded records are not the service's own (the
   *     first replay, before anything is measured)
   * @throws IOException unless the answer is a 201 with {@code Idempotent-Replayed: true}
   */
  static void replay(HttpClient http, URI base, long n, boolean check) throws IOException, InterruptedException {
    String key = keyOf(n);
    HttpRequest request = HttpRequest.newBuilder(base.resolve("/notes")).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json").header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString("{\"title\":\"" + TEMPLATE_TITLE + "\"}")).build();
    HttpResponse<Void> r = http.send(request, HttpResponse.BodyHandlers.discarding());
    if (r.statusCode() != 201 || !"true".equals(r.headers().firstValue("Idempotent-Replayed").orElse(null))) {
      throw new IOException("a replay of preloaded key " + key + " at " + base + " answered " + r.statusCode()
          + (check ? " without Idempotent-Replayed: true; the preloaded records are not the service's own" : ""));
    }
  }

  /** @return the first column of the first row of {@code sql} on {@code url}, as a long */
  static long queryLong(String url, String sql) throws SQLException {
    try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
