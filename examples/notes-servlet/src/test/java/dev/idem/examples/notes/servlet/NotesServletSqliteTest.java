package dev.idem.examples.notes.servlet;

import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** The notes API contract on the plain servlet service and an SQLite file, in transactional mode. */
class NotesServletSqliteTest extends NotesServletContract {

  @TempDir static Path dir;

  @Override
  protected String jdbcUrl() {
    return "jdbc:sqlite:" + dir.resolve("notes.db") + "?journal_mode=WAL&busy_timeout=10000";
  }

  @Override
  protected String expectedProduct() {
    return "SQLite";
  }
}
