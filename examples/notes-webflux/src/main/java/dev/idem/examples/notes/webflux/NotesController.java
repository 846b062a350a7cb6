package dev.idem.examples.notes.webflux;

import dev.idem.core.LeaseContext;
import dev.idem.jdbc.SqlFailure;
import dev.idem.webflux.IdempotencyWebFilter;
import io.r2dbc.spi.R2dbcException;
import java.net.URI;
import java.sql.SQLException;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The notes API, as {@code examples/notes-service} serves it: the same paths, bodies, status codes
 * and problems. The controller knows nothing about idempotency keys: Idem's WebFilter (configured by
 * {@code idem.required-key-routes=POST /notes}) answers a retry with the stored response before this
 * code runs. In transactional mode (the default beside an R2DBC {@code ConnectionFactory}) {@link
 * #create} runs inside the filter's reactive transaction and {@link NoteRepository}'s {@code
 * DatabaseClient} joins it, so the note and its stored response commit together. Nothing here
 * blocks.
 */
@RestController
@RequestMapping("/notes")
public class NotesController {

  private static final Logger LOG = LoggerFactory.getLogger(NotesController.class);

  private final NoteRepository notes;

  public NotesController(NoteRepository notes) {
    this.notes = notes;
  }

  /**
   * {@code POST /notes {"title": "..."}}: 201 with {@code Location: /notes/{id}} and the note.
   *
   * <p>In lease mode ({@code idem.mode=lease}) the claim commits before this method runs and the
   * stored response after it; a crash in between leaves a note whose key is still claimed, and the
   * retry that takes the expired lease over runs this method again with {@link
   * LeaseContext#recovery()} {@code true}. So the note is stored with its key's reference ({@link
   * NoteRepository#ref}, unique): a recovery answers with the note it finds by that reference, and
   * an insert that meets the unique index (a first run still going) answers with that note.
   */
  @PostMapping(consumes = MediaType.APPLICATION_JSON_VALUE)
  public Mono<ResponseEntity<?>> create(@RequestBody Object body, ServerWebExchange exchange) {
    // Read as plain Java values (an object is a Map, a string a String), as the Spring MVC service.
    Object title = body instanceof Map<?, ?> object ? object.get("title") : null;
    if (!(title instanceof String)) {
      return Mono.just(problem(HttpStatus.BAD_REQUEST, "Invalid note", "the body must be a JSON object with a string member \"title\""));
    }
    String text = ((String) title).strip();
    int length = text.codePointCount(0, text.length());
    if (length < 1 || length > NoteRepository.MAX_TITLE_LENGTH) {
      return Mono.just(problem(HttpStatus.BAD_REQUEST, "Invalid note",
          "the title must have 1 to " + NoteRepository.MAX_TITLE_LENGTH + " characters (not counting surrounding blanks), it has " + length));
    }
    LeaseContext lease = IdempotencyWebFilter.leaseContext(exchange).orElse(null);
    Mono<Note> note;
    if (lease == null) {
      note = notes.insert(text, null);
    } else {
      String ref = NoteRepository.ref(lease.scope(), lease.key());
      // Another run of this operation (one still going past its lease) inserted the note first.
      Mono<Note> inserted = notes.insert(text, ref)
          .onErrorResume(DataIntegrityViolationException.class, e -> notes.findByRef(ref).switchIfEmpty(Mono.error(e)));
      note = lease.recovery()
          ? notes.findByRef(ref)
              .doOnNext(earlier -> LOG.info("recovery of an earlier run: answering with the note it created, #{}", earlier.id()))
              .switchIfEmpty(inserted)
          : inserted;
    }
    return note.map(n -> ResponseEntity.created(URI.create("/notes/" + n.id())).body(n));
  }

  /** {@code GET /notes}: every note, by id. */
  @GetMapping
  public Flux<Note> list() {
    return notes.findAll();
  }

  /** {@code GET /notes/{id}}: one note, or 404. */
  @GetMapping("/{id}")
  public Mono<ResponseEntity<?>> get(@PathVariable("id") long id) {
    return notes.findById(id)
        .<ResponseEntity<?>>map(ResponseEntity::ok)
        .defaultIfEmpty(problem(HttpStatus.NOT_FOUND, "Note not found", "there is no note " + id));
  }

  /**
   * The database failed. As in the Spring MVC service ({@link SqlFailure}): a failure that a retry
   * can get past (connection lost or refused, deadlock, serialization failure) is a 503, which
   * Idem does not store, so the retry with the same key runs again; data the database refuses is the
   * request's fault (400, or 409 for a constraint), stored and replayed; anything else is a 500.
   */
  @ExceptionHandler(DataAccessException.class)
  public ResponseEntity<ProblemDetail> databaseFailed(DataAccessException e) {
    String state = sqlState(e);
    SqlFailure kind = e instanceof TransientDataAccessException || e instanceof DataAccessResourceFailureException
        ? SqlFailure.TRANSIENT
        : SqlFailure.of(new SQLException(e.getMessage(), state));
    switch (kind) {
      case TRANSIENT:
        LOG.warn("database unavailable [SQLState {}]: {}", state, e.getMessage());
        return problem(HttpStatus.SERVICE_UNAVAILABLE, "Database unavailable",
            "the notes database cannot be used right now and the request was not carried out; retry later");
      case REJECTED:
        LOG.info("the database refused a note [SQLState {}]", state);
        if (state != null && state.startsWith("23")) {
          return problem(HttpStatus.CONFLICT, "Note conflicts with the stored notes", "the database refused the note (SQLState " + state + ")");
        }
        return problem(HttpStatus.BAD_REQUEST, "Invalid note",
            "the database cannot store this title (SQLState " + state + "); for example, PostgreSQL refuses the character U+0000");
      default:
        LOG.error("database failure [SQLState {}]", state, e);
        return problem(HttpStatus.INTERNAL_SERVER_ERROR, "Database failure", "the notes service failed to use its database");
    }
  }

  /** @return the SQLState of the first {@link R2dbcException} behind {@code e}, or {@code null} */
  private static String sqlState(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof R2dbcException r2dbc) {
        return r2dbc.getSqlState();
      }
    }
    return null;
  }

  private static ResponseEntity<ProblemDetail> problem(HttpStatus status, String title, String detail) {
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
    problem.setTitle(title);
    return ResponseEntity.status(status).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(problem);
  }
}
