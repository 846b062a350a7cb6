package dev.idem.testkit;

import org.junit.jupiter.api.Nested;

/**
 * Idem's own test of a database: every published transactional contract ({@link
 * AllTransactionalContracts}) and the lab's scenarios on it, which are not a published contract.
 */
abstract class LabScenariosTransactionalContracts extends AllTransactionalContracts {

  /** The lab's scenarios on {@link #target()}. */
  @Nested
  class LabScenarios extends LabScenariosContract {
    @Override
    protected TransactionalTarget target() {
      return LabScenariosTransactionalContracts.this.target();
    }
  }
}
