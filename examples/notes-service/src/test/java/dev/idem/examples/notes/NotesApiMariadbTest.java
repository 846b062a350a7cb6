package dev.idem.examples.notes;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The notes API contract on MariaDB, in a database of its own: the transactional filter joins the
 * service's Spring transactions there too. Skipped with a message when the server is not
 * reachable; a failure under {@code CI=true}.
 */
class NotesApiMariadbTest extends NotesServiceContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> DB.target().url());
  }

  @Override
  protected String expectedProduct() {
    return "MariaDB";
  }
}
