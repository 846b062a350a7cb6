package dev.idem.examples.notes.servlet;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The notes API contract on the plain servlet service and PostgreSQL, in a database of its own, in
 * transactional mode. Skipped with a message when the server is not reachable; a failure under
 * {@code CI=true}.
 */
class NotesServletPostgresTest extends NotesServletContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  protected String jdbcUrl() {
    return DB.target().url();
  }

  @Override
  protected String expectedProduct() {
    return "PostgreSQL";
  }
}
