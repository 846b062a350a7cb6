package dev.idem.servlet;

import dev.idem.testkit.TestDatabase;
import dev.idem.testkit.conformance.AnyonceConformance;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Every anyonce conformance vector through the filter in transactional mode on an SQLite file. */
class ConformanceSqliteTransactionalTest {

  @RegisterExtension static final TestDatabase SQLITE = TestDatabase.sqlite();

  @TestFactory
  Stream<DynamicTest> vectors() {
    return AnyonceConformance.tests(new ServletConformance(new TransactionalConformance(SQLITE.target().dataSource())));
  }
}
