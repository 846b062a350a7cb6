package dev.idem.examples.notes;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The notes service: a note saved from a web page, where a retry after a lost response must not
 * create a second note. {@code POST /notes} requires an {@code Idempotency-Key}; Idem's starter
 * puts its filter in front of the controller and keeps the keys in the same database as the notes.
 */
@SpringBootApplication
public class NotesApplication {

  public static void main(String[] args) {
    SpringApplication.run(NotesApplication.class, args);
  }
}
