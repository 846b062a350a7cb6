package dev.idem.examples.notes;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * <b>Benchmark only, off by default</b> ({@code notes.benchmark.floor-endpoint=true} turns it on, and
 * then {@code idem.enabled=false} is required). {@code POST /bench/floor/notes} with an {@code
 * Idempotency-Key}: the idempotent create written by hand, without a library, as the floor that
 * the HTTP benchmark ({@code HttpLoad} in idem-benchmarks) compares Idem with.
 *
 * <ol>
 *   <li>One primary-key read of {@code floor_keys} in auto-commit. Found: the same fingerprint
 *       (SHA-256 hex of the body's bytes) answers the stored status and body, another one 422.
 *   <li>Otherwise one transaction, key last: the note ({@link NoteRepository#insert}), its JSON
 *       answer, then the key row inserted with {@code ON CONFLICT DO NOTHING} (MariaDB: {@code
 *       INSERT IGNORE}). No row inserted means a concurrent request with that key committed first:
 *       roll back, read its row and answer from it. Commit; 201 with the JSON and {@code Location}
 *       of {@code POST /notes}.
 * </ol>
 *
 * No scope, no expiry, no in-progress state: not a pattern for production code.
 */
@RestController
@ConditionalOnProperty(prefix = "notes.benchmark", name = "floor-endpoint", havingValue = "true")
class FloorBenchmarkController {

  private static final HexFormat HEX = HexFormat.of();

  private record Stored(String fingerprint, int status, String response) {}

  private final NoteRepository notes;
  private final JdbcTemplate jdbc;
  private final TransactionTemplate tx;
  private final String insertKey;

  FloorBenchmarkController(NoteRepository notes, JdbcTemplate jdbc, PlatformTransactionManager transactions,
      @Value("${idem.enabled:true}") boolean idem) {
    if (idem) {
      throw new IllegalStateException("notes.benchmark.floor-endpoint=true needs idem.enabled=false: the floor is measured without Idem");
    }
    this.notes = notes;
    this.jdbc = jdbc;
    this.tx = new TransactionTemplate(transactions);
    String product = jdbc.execute((ConnectionCallback<String>) c -> c.getMetaData().getDatabaseProductName());
    String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
    boolean mariadb = p.contains("mariadb") || p.contains("mysql");
    jdbc.execute(mariadb
        ? "CREATE TABLE IF NOT EXISTS floor_keys (idem_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY,"
            + " fingerprint CHAR(64) NOT NULL, status INT NOT NULL, response TEXT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        : "CREATE TABLE IF NOT EXISTS floor_keys (idem_key VARCHAR(255) PRIMARY KEY, fingerprint CHAR(64) NOT NULL,"
            + " status INT NOT NULL, response TEXT NOT NULL)");
    String columns = "floor_keys (idem_key, fingerprint, status, response) VALUES (?, ?, ?, ?)";
    this.insertKey = mariadb ? "INSERT IGNORE INTO " + columns : "INSERT INTO " + columns + " ON CONFLICT DO NOTHING";
  }

  @PostMapping(path = "/bench/floor/notes", consumes = MediaType.APPLICATION_JSON_VALUE)
  ResponseEntity<String> create(@RequestHeader("Idempotency-Key") String key, @RequestBody byte[] body) {
    if (key.isBlank() || key.length() > 255) {
      return error(HttpStatus.BAD_REQUEST, "the Idempotency-Key must have 1 to 255 characters");
    }
    String fingerprint = sha256(body);
    Stored earlier = find(key);
    if (earlier != null) {
      return answer(earlier, fingerprint);
    }
    String title = title(body);
    if (title == null) {
      return error(HttpStatus.BAD_REQUEST, "the body must be a JSON object with a string member \"title\" of 1 to "
          + NoteRepository.MAX_TITLE_LENGTH + " characters");
    }
    Note note = tx.execute(status -> {
      Note n = notes.insert(title);
      if (jdbc.update(insertKey, key, fingerprint, 201, json(n)) == 0) {
        status.setRollbackOnly(); // another request with this key committed first: undo our note
        return null;
      }
      return n;
    });
    if (note == null) {
      Stored winner = find(key);
      return winner == null ? error(HttpStatus.CONFLICT, "a request with this Idempotency-Key did not commit; retry")
          : answer(winner, fingerprint);
    }
    return ResponseEntity.created(URI.create("/notes/" + note.id())).contentType(MediaType.APPLICATION_JSON).body(json(note));
  }

  private Stored find(String key) {
    List<Stored> rows = jdbc.query("SELECT fingerprint, status, response FROM floor_keys WHERE idem_key = ?",
        (rs, i) -> new Stored(rs.getString(1), rs.getInt(2), rs.getString(3)), key);
    return rows.isEmpty() ? null : rows.get(0);
  }

  private static ResponseEntity<String> answer(Stored stored, String fingerprint) {
    if (!stored.fingerprint().equals(fingerprint)) {
      return error(HttpStatus.UNPROCESSABLE_ENTITY, "this Idempotency-Key was used with another body");
    }
    return ResponseEntity.status(stored.status()).contentType(MediaType.APPLICATION_JSON).header("Idempotent-Replayed", "true")
        .body(stored.response());
  }

  /** @return the stripped title, or {@code null} if the body is not {@code {"title": "1 to 200 characters"}} */
  private static String title(byte[] body) {
    Map<String, Object> object;
    try {
      object = JsonParserFactory.getJsonParser().parseMap(new String(body, StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) { // JsonParseException among them
      return null;
    }
    if (!(object.get("title") instanceof String t)) {
      return null;
    }
    String text = t.strip();
    int length = text.codePointCount(0, text.length());
    return length < 1 || length > NoteRepository.MAX_TITLE_LENGTH ? null : text;
  }

  /** The note as {@code POST /notes} answers it: {@code {"id":1,"title":"..."}}. */
  static String json(Note note) {
    StringBuilder sb = new StringBuilder("{\"id\":").append(note.id()).append(",\"title\":\"");
    String s = note.title();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append("\"}").toString();
  }

  private static String sha256(byte[] body) {
    try {
      return HEX.formatHex(MessageDigest.getInstance("SHA-256").digest(body));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }

  private static ResponseEntity<String> error(HttpStatus status, String detail) {
    return ResponseEntity.status(status).contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .body("{\"status\":" + status.value() + ",\"detail\":\"" + detail.replace("\"", "\\\"") + "\"}");
  }
}
