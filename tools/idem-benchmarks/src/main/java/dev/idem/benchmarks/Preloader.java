package dev.idem.benchmarks;

import dev.idem.core.spi.StoredResponseCodec;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.regex.Pattern;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

/**
 * Bulk-loads completed records into an Idem key table (the shipped schema), as fast as each
 * database takes them: PostgreSQL {@code COPY FROM STDIN}, MariaDB multi-row {@code INSERT}s of
 * 1,000 rows committed every 50,000, SQLite one transaction of batched inserts. Every record is a
 * completed create of {@link Requests#BODY} with a 201 response, expiring in 24 hours. Afterwards
 * the table is analyzed and, where possible, the log checkpointed, so the load's own write-back
 * does not land in the measurement that follows.
 */
final class Preloader {

  private static final Pattern SAFE_KEY = Pattern.compile("[0-9a-f-]{36}");
  private static final String COLUMNS =
      "(principal, operation, idem_key, fingerprint, state, status, response, created_at, expires_at)";

  private Preloader() {}

  static void load(SqlBackend db, String table, String[] keys) throws SQLException {
    byte[] response = StoredResponseCodec.encode(Requests.created(1));
    String fingerprint = Requests.FINGERPRINT.hex();
    long now = System.currentTimeMillis();
    long expires = now + 86_400_000L;
    Connection c = db.admin();
    switch (db.kind) {
      case POSTGRES:
        copy(c, table, keys, fingerprint, response, now, expires);
        db.execute("ANALYZE " + table);
        db.execute("CHECKPOINT");
        break;
      case MARIADB:
        multiRow(c, table, keys, fingerprint, response, now, expires);
        db.execute("ANALYZE TABLE " + table);
        break;
      default:
        batch(c, table, keys, fingerprint, response, now, expires);
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)");
        break;
    }
  }

  private static void copy(Connection c, String table, String[] keys, String fp, byte[] response, long now, long expires)
      throws SQLException {
    String principal = Requests.SCOPE.principal();
    String operation = Requests.SCOPE.operation();
    String tail = "\t" + fp + "\tCOMPLETED\t201\t\\\\x" + HexFormat.of().formatHex(response) + "\t" + now + "\t" + expires + "\n";
    CopyIn in = c.unwrap(PGConnection.class).getCopyAPI().copyIn("COPY " + table + " " + COLUMNS + " FROM STDIN");
    try {
      StringBuilder sb = new StringBuilder(1 << 20);
      for (String key : keys) {
        sb.append(principal).append('\t').append(operation).append('\t').append(key).append(tail);
        if (sb.length() > (1 << 20) - 512) {
          byte[] bytes = sb.toString().getBytes(StandardCharsets.UTF_8);
          in.writeToCopy(bytes, 0, bytes.length);
          sb.setLength(0);
        }
      }
      byte[] bytes = sb.toString().getBytes(StandardCharsets.UTF_8);
      in.writeToCopy(bytes, 0, bytes.length);
      in.endCopy();
    } finally {
      if (in.isActive()) {
        in.cancelCopy();
      }
    }
  }

  private static void multiRow(Connection c, String table, String[] keys, String fp, byte[] response, long now, long expires)
      throws SQLException {
    String head = "INSERT INTO " + table + " " + COLUMNS + " VALUES ";
    String prefix = "('" + Requests.SCOPE.principal() + "','" + Requests.SCOPE.operation() + "','";
    String tail = "','" + fp + "','COMPLETED',201,X'" + HexFormat.of().formatHex(response) + "'," + now + "," + expires + ")";
    c.setAutoCommit(false);
    try (Statement st = c.createStatement()) {
      StringBuilder sb = new StringBuilder(head);
      int inStatement = 0;
      for (int i = 0; i < keys.length; i++) {
        if (!SAFE_KEY.matcher(keys[i]).matches()) {
          throw new IllegalArgumentException("not a UUID-shaped key: " + keys[i]);
        }
        if (inStatement > 0) {
          sb.append(',');
        }
        sb.append(prefix).append(keys[i]).append(tail);
        if (++inStatement == 1000 || i == keys.length - 1) {
          st.executeUpdate(sb.toString());
          sb.setLength(0);
          sb.append(head);
          inStatement = 0;
        }
        if ((i + 1) % 50_000 == 0) {
          c.commit();
        }
      }
      c.commit();
    } catch (SQLException | RuntimeException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(true);
    }
  }

  private static void batch(Connection c, String table, String[] keys, String fp, byte[] response, long now, long expires)
      throws SQLException {
    c.setAutoCommit(false);
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + table + " " + COLUMNS + " VALUES (?, ?, ?, ?, 'COMPLETED', 201, ?, ?, ?)")) {
      for (int i = 0; i < keys.length; i++) {
        ps.setString(1, Requests.SCOPE.principal());
        ps.setString(2, Requests.SCOPE.operation());
        ps.setString(3, keys[i]);
        ps.setString(4, fp);
        ps.setBytes(5, response);
        ps.setLong(6, now);
        ps.setLong(7, expires);
        ps.addBatch();
        if ((i + 1) % 10_000 == 0) {
          ps.executeBatch();
        }
      }
      ps.executeBatch();
      c.commit();
    } catch (SQLException | RuntimeException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(true);
    }
  }
}
