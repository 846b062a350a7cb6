package dev.idem.examples.notes.webflux;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The notes service on Spring WebFlux: the HTTP API of {@code examples/notes-service} (a note saved
 * from a web page, where a retry after a lost response must not create a second note), served by
 * Reactor Netty, with the notes in PostgreSQL through R2DBC. {@code POST /notes} requires an {@code
 * Idempotency-Key}; Idem's starter puts its WebFilter in front of the controller and, beside the
 * R2DBC {@code ConnectionFactory}, runs each protected request in one reactive transaction that
 * holds the note, the key and the stored answer.
 */
@SpringBootApplication
public class NotesWebFluxApplication {

  /**
   * Starts the service.
   *
   * @param args Spring Boot's command-line arguments, such as {@code --spring.r2dbc.url=...}
   */
  public static void main(String[] args) {
    SpringApplication.run(NotesWebFluxApplication.class, args);
  }
}
