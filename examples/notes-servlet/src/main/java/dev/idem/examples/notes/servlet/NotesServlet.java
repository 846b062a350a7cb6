package dev.idem.examples.notes.servlet;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.jdbc.SqlFailure;
import dev.idem.servlet.IdempotencyFilter;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The notes API: {@code POST /notes {"title": "..."}} (201 with {@code Location: /notes/{id}} and
 * the note), {@code GET /notes} (every note, by id) and {@code GET /notes/{id}} (one note, or 404).
 * Errors are {@code application/problem+json}.
 *
 * <p>A {@code POST} runs behind {@link IdempotencyFilter} in transactional mode: it writes on the
 * connection of the filter's transaction ({@link IdempotencyFilter#connection}), so the note, the key and the stored response commit
 * together, and an answer that is not stored (a 406, a 503) takes the note with it. Thread-safe.
 */
final class NotesServlet extends HttpServlet {

  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final transient DataSource dataSource;

  NotesServlet(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  @Override
  protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
    if (!"/notes".equals(req.getServletPath()) || req.getPathInfo() != null) {
      problem(res, 405, "Method not allowed", "only /notes takes a POST");
      return;
    }
    if (!isJson(req.getContentType())) {
      // before reading the body: a note is only ever made from JSON, as the Spring service's
      // consumes = application/json says
      problem(res, 415, "Unsupported media type", "the body must be application/json");
      return;
    }
    JsonNode body;
    try {
      body = JSON.readTree(req.getInputStream());
    } catch (JacksonException e) {
      body = null;
    }
    JsonNode title = body == null ? null : body.get("title");
    if (title == null || !title.isTextual()) {
      problem(res, 400, "Invalid note", "the body must be a JSON object with a string member \"title\"");
      return;
    }
    String text = title.asText().strip();
    int length = text.codePointCount(0, text.length());
    if (length < 1 || length > NoteTable.MAX_TITLE_LENGTH) {
      problem(res, 400, "Invalid note",
          "the title must have 1 to " + NoteTable.MAX_TITLE_LENGTH + " characters (not counting surrounding blanks), it has " + length);
      return;
    }
    Map<String, Object> note;
    try {
      Optional<Connection> transaction = IdempotencyFilter.connection(req);
      if (transaction.isPresent()) {
        note = NoteTable.insert(transaction.get(), text);
      } else {
        try (Connection c = dataSource.getConnection()) { // not behind the filter: a transaction of its own
          note = NoteTable.insert(c, text);
        }
      }
    } catch (SQLException e) {
      databaseFailed(res, e);
      return;
    }
    if (!acceptsJson(req.getHeader("Accept"))) {
      // After the insert, as a framework would find out while writing the answer: the 406 is not
      // stored, so the transaction rolls back and takes the note with it; the retry creates it.
      problem(res, 406, "Not acceptable", "the note is only available as application/json");
      return;
    }
    res.setStatus(201);
    res.setHeader("Location", "/notes/" + note.get("id"));
    json(res, note);
  }

  @Override
  protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
    String info = req.getPathInfo();
    try (Connection c = dataSource.getConnection()) {
      if (info == null || info.equals("/")) {
        res.setStatus(200);
        json(res, NoteTable.all(c));
        return;
      }
      Optional<Map<String, Object>> note = Optional.empty();
      try {
        note = NoteTable.find(c, Long.parseLong(info.substring(1)));
      } catch (NumberFormatException notAnId) {
        // no such note
      }
      if (note.isEmpty()) {
        problem(res, 404, "Note not found", "there is no note " + info.substring(1));
        return;
      }
      res.setStatus(200);
      json(res, note.get());
    } catch (SQLException e) {
      databaseFailed(res, e);
    }
  }

  /**
   * What the client is told depends on whether a retry can succeed ({@link SqlFailure}): a transient
   * failure is a 503 (not stored, so the retry with the same key runs again), data the database
   * refuses a 409 (a constraint) or 400, anything else a 500.
   */
  private static void databaseFailed(HttpServletResponse res, SQLException e) throws IOException {
    switch (SqlFailure.of(e)) {
      case TRANSIENT -> problem(res, 503, "Database unavailable", "the notes database cannot be used right now; retry later");
      case REJECTED -> {
        if (e.getSQLState() != null && e.getSQLState().startsWith("23")) {
          problem(res, 409, "Note conflicts with the stored notes", "the database refused the note (SQLState " + e.getSQLState() + ")");
        } else {
          problem(res, 400, "Invalid note", "the database cannot store this title (SQLState " + e.getSQLState() + ")");
        }
      }
      default -> problem(res, 500, "Database failure", "the notes service failed to use its database");
    }
  }

  /**
   * @param contentType the request's {@code Content-Type} field, or {@code null} when absent
   * @return whether its media type is {@code application/json} (any case, any parameters)
   */
  private static boolean isJson(String contentType) {
    if (contentType == null) {
      return false;
    }
    int semicolon = contentType.indexOf(';');
    String type = (semicolon < 0 ? contentType : contentType.substring(0, semicolon)).strip().toLowerCase(Locale.ROOT);
    return type.equals("application/json");
  }

  /** @return whether an {@code Accept} field (absent: anything) admits {@code application/json} */
  static boolean acceptsJson(String accept) {
    if (accept == null || accept.isBlank()) {
      return true;
    }
    for (String range : accept.split(",")) {
      String type = range.split(";", 2)[0].strip().toLowerCase(Locale.ROOT);
      if (type.equals("*/*") || type.equals("application/*") || type.equals("application/json")) {
        return true;
      }
    }
    return false;
  }

  private static void json(HttpServletResponse res, Object value) throws IOException {
    byte[] bytes = JSON.writeValueAsBytes(value);
    res.setContentType("application/json");
    res.setContentLength(bytes.length);
    res.getOutputStream().write(bytes);
  }

  private static void problem(HttpServletResponse res, int status, String title, String detail) throws IOException {
    Map<String, Object> problem = new LinkedHashMap<>();
    problem.put("type", "about:blank");
    problem.put("title", title);
    problem.put("status", status);
    problem.put("detail", detail);
    byte[] bytes = JSON.writeValueAsBytes(problem);
    res.setStatus(status);
    res.setContentType("application/problem+json");
    res.setContentLength(bytes.length);
    res.getOutputStream().write(bytes);
  }
}
