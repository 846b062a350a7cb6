package dev.idem.servlet;

import dev.idem.testkit.TestDatabase;
import dev.idem.testkit.conformance.AnyonceConformance;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every anyonce conformance vector through the filter in transactional mode on PostgreSQL, in a
 * database of its own ({@code idem_test_<random>}, dropped afterwards; the server at {@code
 * IDEM_TEST_POSTGRES_URL}, default 127.0.0.1:5432 as postgres). Skipped when the server cannot be
 * reached, a failure under {@code CI=true}.
 */
class ConformancePostgresTransactionalTest {

  @RegisterExtension static final TestDatabase POSTGRES = TestDatabase.postgres();

  @TestFactory
  Stream<DynamicTest> vectors() {
    return AnyonceConformance.tests(new ServletConformance(new TransactionalConformance(POSTGRES.target().dataSource())));
  }
}
