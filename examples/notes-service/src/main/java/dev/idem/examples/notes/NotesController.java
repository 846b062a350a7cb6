package dev.idem.examples.notes;

import dev.idem.core.LeaseContext;
import dev.idem.jdbc.SqlFailure;
import dev.idem.servlet.IdempotencyFilter;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.DataIntegrityViolationException;
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

/**
 * The notes API. The controller knows nothing about idempotency keys: Idem's filter (configured by
 * {@code idem.required-key-routes=POST /notes}) answers a retry with the stored response before
 * this code runs, so {@link #create} runs at most once per key. With {@code
 * idem.mode=transactional} the filter runs {@link #create} inside a Spring transaction that also
 * holds the key's record, and {@link NoteRepository}'s {@code JdbcTemplate} joins it: the note and
 * its stored response commit together.
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
   * stored response after it, in separate transactions; a crash between the insert and the
   * completion, or a completion the store could not record, leaves a note whose key is still
   * claimed. The retry that takes over the expired lease runs this method again with {@link
   * LeaseContext#recovery()} {@code true}: it must not insert again. So the note is stored with the
   * reference of its key ({@link NoteRepository#ref}, unique), a recovery looks the note up by it
   * and answers with it, and an insert that meets the unique index (a first run still going past
   * its lease) does the same. In transactional mode there is no lease context and no reference.
   */
  @PostMapping(consumes = MediaType.APPLICATION_JSON_VALUE)
  public ResponseEntity<?> create(@RequestBody Object body, HttpServletRequest request) {
    // Read as plain Java values (an object is a Map, a string a String) rather than a JsonNode, so
    // that the service is bound to neither Jackson major: Spring Boot 4 reads with Jackson 3, 3.5
    // with Jackson 2.
    Object title = body instanceof Map<?, ?> object ? object.get("title") : null;
    if (!(title instanceof String)) {
      return problem(HttpStatus.BAD_REQUEST, "Invalid note", "the body must be a JSON object with a string member \"title\"");
    }
    String text = ((String) title).strip();
    int length = text.codePointCount(0, text.length());
    if (length < 1 || length > NoteRepository.MAX_TITLE_LENGTH) {
      return problem(HttpStatus.BAD_REQUEST, "Invalid note",
          "the title must have 1 to " + NoteRepository.MAX_TITLE_LENGTH + " characters (not counting surrounding blanks), it has " + length);
    }
    LeaseContext lease = IdempotencyFilter.leaseContext(request).orElse(null);
    Note note;
    if (lease == null) {
      note = notes.insert(text);
    } else {
      String ref = NoteRepository.ref(lease.scope(), lease.key());
      Optional<Note> earlier = lease.recovery() ? notes.findByRef(ref) : Optional.empty();
      if (earlier.isPresent()) {
        LOG.info("recovery of an earlier run: answering with the note it created, #{}", earlier.get().id());
        note = earlier.get();
      } else {
        try {
          note = notes.insert(text, ref);
        } catch (DataIntegrityViolationException e) {
          // The unique reference: another run of this operation (one still going past its lease)
          // inserted the note first. Answer with that note.
          note = notes.findByRef(ref).orElseThrow(() -> e);
        }
      }
    }
    return ResponseEntity.created(URI.create("/notes/" + note.id())).body(note);
  }

  /** {@code GET /notes}: every note, by id. */
  @GetMapping
  public List<Note> list() {
    return notes.findAll();
  }

  /** {@code GET /notes/{id}}: one note, or 404. */
  @GetMapping("/{id}")
  public ResponseEntity<?> get(@PathVariable("id") long id) {
    return notes.findById(id)
        .<ResponseEntity<?>>map(ResponseEntity::ok)
        .orElseGet(() -> problem(HttpStatus.NOT_FOUND, "Note not found", "there is no note " + id));
  }

  /**
   * The database failed. What the client is told depends on whether a retry can succeed ({@link
   * SqlFailure}): a transient failure (connection lost, deadlock, lock timeout, server short of
   * resources or shutting down) is a 503, so that the client retries, and Idem's default response
   * policy releases the key on a 5xx, so the retry with the same key runs again instead of replaying
   * this error. Data the database refuses (a title PostgreSQL cannot store, such as one holding
   * U+0000) is the request's fault: 400, stored and replayed like any other answer, since the same
   * request fails the same way. A constraint violation is a 409. Anything else is the service's own
   * fault: 500, never "retry later".
   */
  @ExceptionHandler(DataAccessException.class)
  public ResponseEntity<ProblemDetail> databaseFailed(DataAccessException e, HttpServletRequest request) {
    SqlFailure kind = SqlFailure.of(e);
    String state = sqlState(e);
    switch (kind) {
      case TRANSIENT:
        if (IdempotencyFilter.leaseContext(request).isPresent() && mayHaveWritten(e, state)) {
          // Lease mode: the insert is its own transaction, and the connection broke after it was
          // sent, so it may have committed. Say so; the retry with the same key finds the note by
          // its key's reference (or saves it once).
          LOG.warn("the connection broke while a note was being saved [SQLState {}]: {}", state, e.getMessage());
          return problem(HttpStatus.SERVICE_UNAVAILABLE, "Outcome of the request is unknown",
              "the notes database failed while the note was being saved, so whether it was saved is not known; retry with the"
                  + " same Idempotency-Key: the retry returns the note if it was saved, and saves it once if it was not");
        }
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

  /**
   * Whether a transient failure may have come after the statement reached the database, so that
   * its write may have committed: a connection that broke or was terminated (SQLState class 08, or
   * PostgreSQL's 57P01 to 57P03, or a failure without SQLState, as drivers report a socket that
   * closed). Not when no connection could be had at all, nor for a deadlock, a serialization
   * failure or a lock timeout, where the database undid the statement.
   */
  static boolean mayHaveWritten(DataAccessException e, String state) {
    if (e instanceof org.springframework.jdbc.CannotGetJdbcConnectionException) {
      return false;
    }
    return state == null || state.startsWith("08") || state.startsWith("57P");
  }

  /** @return the SQLState of the first {@link SQLException} behind {@code e}, or {@code null} */
  private static String sqlState(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SQLException sql) {
        return sql.getSQLState();
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
