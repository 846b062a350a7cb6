package dev.idem.spring.jpa;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** PostgreSQL, with Spring Boot's default open-session-in-view (on). */
class JpaOnPostgresTest extends JpaTransactionalContract {
  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    properties(r, DB, true);
  }
}
