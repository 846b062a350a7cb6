package dev.idem.docs.spring;

import java.net.URI;
import java.util.Map;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

// tag::controller[]
@RestController
class NotesController {

  private final JdbcClient jdbc;

  NotesController(JdbcClient jdbc) {
    this.jdbc = jdbc;
  }

  /** Runs in Idem's transaction: the note, the key and the stored answer commit together. */
  @PostMapping("/notes")
  ResponseEntity<Map<String, Object>> create(@RequestBody Map<String, String> note) {
    long id = jdbc.sql("INSERT INTO notes (title) VALUES (?) RETURNING id")
        .param(note.get("title"))
        .query(Long.class)
        .single();
    return ResponseEntity.created(URI.create("/notes/" + id)).body(Map.of("id", id, "title", note.get("title")));
  }
}
// end::controller[]
