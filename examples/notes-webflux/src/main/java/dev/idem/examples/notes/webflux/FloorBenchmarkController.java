package dev.idem.examples.notes.webflux;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.transaction.ReactiveTransactionManager;
import org.springframework.transaction.reactive.TransactionalOperator;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * <b>Benchmark only, off by default</b> ({@code notes.benchmark.floor-endpoint=true} turns it on, and
 * then {@code idem.enabled=false} is required). {@code POST /bench/floor/notes} with an {@code
 * Idempotency-Key}: the idempotent create written by hand, without a library, as the floor that the
 * WebFlux HTTP benchmark ({@code HttpLoad --stack webflux} in idem-benchmarks) compares Idem with.
 * The same algorithm as the Spring MVC service's floor, written reactively: every step is a
 * {@link DatabaseClient} statement, the transaction a {@link TransactionalOperator}; nothing blocks.
 *
 * <ol>
 *   <li>One primary-key read of {@code floor_keys} outside a transaction. Found: the same
 *       fingerprint (SHA-256 hex of the body's bytes) answers the stored status and body, another
 *       one 422.
 *   <li>Otherwise one transaction, key last: the note ({@link NoteRepository#insert}), its JSON
 *       answer, then the key row inserted with {@code ON CONFLICT DO NOTHING}. No row inserted means
 *       a concurrent request with that key committed first: roll back, read its row and answer from
 *       it. Commit; 201 with the JSON and {@code Location} of {@code POST /notes}.
 * </ol>
 *
 * No scope, no expiry, no in-progress state: not a pattern for production code.
 */
@RestController
@ConditionalOnProperty(prefix = "notes.benchmark", name = "floor-endpoint", havingValue = "true")
class FloorBenchmarkController {

  private static final HexFormat HEX = HexFormat.of();

  private static final String INSERT_KEY = "INSERT INTO floor_keys (idem_key, fingerprint, status, response)"
      + " VALUES (:key, :fingerprint, :status, :response) ON CONFLICT DO NOTHING";

  private record Stored(String fingerprint, int status, String response) {}

  private final NoteRepository notes;
  private final DatabaseClient db;
  private final TransactionalOperator tx;

  /**
   * Makes {@code floor_keys} when missing, waiting for it on the calling thread (the application's
   * start-up, never an event loop).
   *
   * @throws IllegalStateException if Idem is enabled
   */
  FloorBenchmarkController(NoteRepository notes, DatabaseClient db, ReactiveTransactionManager transactions,
      @Value("${idem.enabled:true}") boolean idem) {
    if (idem) {
      throw new IllegalStateException("notes.benchmark.floor-endpoint=true needs idem.enabled=false: the floor is measured without Idem");
    }
    this.notes = notes;
    this.db = db;
    this.tx = TransactionalOperator.create(transactions);
    db.sql("CREATE TABLE IF NOT EXISTS floor_keys (idem_key VARCHAR(255) PRIMARY KEY, fingerprint CHAR(64) NOT NULL,"
        + " status INT NOT NULL, response TEXT NOT NULL)").then().block();
  }

  @PostMapping(path = "/bench/floor/notes", consumes = MediaType.APPLICATION_JSON_VALUE)
  Mono<ResponseEntity<String>> create(@RequestHeader("Idempotency-Key") String key, @RequestBody byte[] body) {
    if (key.isBlank() || key.length() > 255) {
      return Mono.just(error(HttpStatus.BAD_REQUEST, "the Idempotency-Key must have 1 to 255 characters"));
    }
    String fingerprint = sha256(body);
    return find(key)
        .map(earlier -> answer(earlier, fingerprint))
        .switchIfEmpty(Mono.defer(() -> {
          String title = title(body);
          if (title == null) {
            return Mono.just(error(HttpStatus.BAD_REQUEST, "the body must be a JSON object with a string member \"title\" of 1 to "
                + NoteRepository.MAX_TITLE_LENGTH + " characters"));
          }
          return tx.execute(status -> notes.insert(title, null)
                  .flatMap(n -> db.sql(INSERT_KEY).bind("key", key).bind("fingerprint", fingerprint).bind("status", 201)
                      .bind("response", json(n)).fetch().rowsUpdated()
                      .flatMap(rows -> {
                        if (rows == 0) {
                          status.setRollbackOnly(); // another request with this key committed first: undo our note
                          return Mono.<Note>empty();
                        }
                        return Mono.just(n);
                      })))
              .singleOrEmpty()
              .map(note -> ResponseEntity.created(URI.create("/notes/" + note.id())).contentType(MediaType.APPLICATION_JSON)
                  .body(json(note)))
              .switchIfEmpty(Mono.defer(() -> find(key)
                  .map(winner -> answer(winner, fingerprint))
                  .defaultIfEmpty(error(HttpStatus.CONFLICT, "a request with this Idempotency-Key did not commit; retry"))));
        }));
  }

  private Mono<Stored> find(String key) {
    return db.sql("SELECT fingerprint, status, response FROM floor_keys WHERE idem_key = :key").bind("key", key)
        .map(row -> {
          String fingerprint = row.get("fingerprint", String.class);
          Integer status = row.get("status", Integer.class);
          String response = row.get("response", String.class);
          if (fingerprint == null || status == null || response == null) {
            throw new IllegalStateException("a floor_keys row with a null column");
          }
          return new Stored(fingerprint, status, response);
        })
        .one();
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
