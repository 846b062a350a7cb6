package dev.idem.examples.notes;

import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The notes API contract on the default database, an SQLite file. */
class NotesApiTest extends NotesServiceContract {

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> Api.sqliteUrl(dir));
  }

  @Override
  protected String expectedProduct() {
    return "SQLite";
  }
}
