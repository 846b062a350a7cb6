package dev.idem.examples.notes.webflux;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import io.r2dbc.spi.Readable;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Repository;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The {@code notes} table through Spring's {@link DatabaseClient}: every method returns at once and
 * completes on the driver's threads, none blocks. The table is made at start-up by {@code
 * schema.sql} ({@code spring.sql.init.mode=always}).
 *
 * <p>Inside a protected request in transactional mode, {@link DatabaseClient} finds the filter's
 * transaction in the Reactor context and joins it: the note commits with its key and stored answer,
 * or not at all. In lease mode ({@code idem.mode=lease}) a note carries {@code idem_ref}, a digest
 * of its idempotency key and scope ({@link #ref}), under a unique index, so that a run that takes
 * over an expired lease finds the note of the first run instead of inserting a second one.
 */
@Repository
public class NoteRepository {

  /** The longest title, in characters (Unicode code points). */
  public static final int MAX_TITLE_LENGTH = 200;

  private static final HexFormat HEX = HexFormat.of();

  private final DatabaseClient db;

  public NoteRepository(DatabaseClient db) {
    this.db = db;
  }

  /**
   * The reference a lease-mode note is stored with: the 64 lowercase hexadecimal digits of SHA-256
   * over the UTF-8 bytes of {@code principal + "\0" + operation + "\0" + key}, as the Spring MVC
   * notes service makes it. Equal exactly for the same idempotency key in the same scope.
   *
   * @param scope the claim's scope
   * @param key the idempotency key
   * @return the reference, never {@code null}
   */
  public static String ref(Scope scope, IdempotencyKey key) {
    String id = scope.principal() + '\u0000' + scope.operation() + '\u0000' + key.value();
    try {
      return HEX.formatHex(MessageDigest.getInstance("SHA-256").digest(id.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }

  /**
   * Inserts a note with the reference of the operation that creates it.
   *
   * @param title the title
   * @param ref the operation's {@link #ref}, or {@code null} for none (transactional mode)
   * @return the note with its new id; an error {@link org.springframework.dao.DataIntegrityViolationException}
   *     if a note with this reference exists, another {@link org.springframework.dao.DataAccessException}
   *     if the database fails
   */
  public Mono<Note> insert(String title, String ref) {
    DatabaseClient.GenericExecuteSpec insert = db.sql("INSERT INTO notes (title, idem_ref) VALUES (:title, :ref)")
        .bind("title", title);
    insert = ref == null ? insert.bindNull("ref", String.class) : insert.bind("ref", ref);
    return insert.filter(statement -> statement.returnGeneratedValues("id"))
        .map(row -> row.get("id", Long.class))
        .one()
        .map(id -> new Note(id, title));
  }

  /** @return every note, by ascending id */
  public Flux<Note> findAll() {
    return db.sql("SELECT id, title FROM notes ORDER BY id").map(NoteRepository::note).all();
  }

  /** @return the note with this id, or empty */
  public Mono<Note> findById(long id) {
    return db.sql("SELECT id, title FROM notes WHERE id = :id").bind("id", id).map(NoteRepository::note).one();
  }

  /** @return the note created by the operation with this {@link #ref}, or empty */
  public Mono<Note> findByRef(String ref) {
    return db.sql("SELECT id, title FROM notes WHERE idem_ref = :ref").bind("ref", ref).map(NoteRepository::note).one();
  }

  private static Note note(Readable row) {
    Long id = row.get("id", Long.class);
    String title = row.get("title", String.class);
    if (id == null || title == null) {
      throw new IllegalStateException("a note row without id or title");
    }
    return new Note(id, title);
  }
}
