package dev.idem.testkit;

import org.junit.jupiter.api.Nested;

/**
 * Every transactional contract on one database, for a store's test to extend with one method: each
 * contract runs as a {@code @Nested} class of this one (JUnit 5 finds nested classes declared in a
 * superclass), on the {@link #target()} the subclass names. A test that wants only some contracts
 * declares its own {@code @Nested} classes instead, as this class does.
 *
 * <pre>{@code
 * class PostgresTransactionalContractTest extends AllTransactionalContracts {
 *   @RegisterExtension static final TestDatabase db = TestDatabase.postgres();
 *
 *   @Override
 *   protected TransactionalTarget target() {
 *     return TransactionalTarget.of(db.target());
 *   }
 * }
 * }</pre>
 *
 * <p>A new instance per test class run; not thread-safe.
 */
public abstract class AllTransactionalContracts {

  /** For subclasses. */
  protected AllTransactionalContracts() {}

  /**
   * @return the database and the write order every contract runs on, never {@code null}; called
   *     before each test
   */
  protected abstract TransactionalTarget target();

  /** {@link ExecuteContract} on {@link #target()}. */
  @Nested
  public class Execute extends ExecuteContract {
    @Override
    protected TransactionalTarget target() {
      return AllTransactionalContracts.this.target();
    }
  }

  /** {@link FailureContract} on {@link #target()}. */
  @Nested
  public class Failures extends FailureContract {
    @Override
    protected TransactionalTarget target() {
      return AllTransactionalContracts.this.target();
    }
  }

  /** {@link ConcurrencyContract} on {@link #target()}. */
  @Nested
  public class Concurrency extends ConcurrencyContract {
    @Override
    protected TransactionalTarget target() {
      return AllTransactionalContracts.this.target();
    }
  }

  /** {@link KeyTableContract} on {@link #target()}. */
  @Nested
  public class KeyTable extends KeyTableContract {
    @Override
    protected TransactionalTarget target() {
      return AllTransactionalContracts.this.target();
    }
  }

  /** {@link KeyStatusContract} on {@link #target()}. */
  @Nested
  public class KeyStatus extends KeyStatusContract {
    @Override
    protected TransactionalTarget target() {
      return AllTransactionalContracts.this.target();
    }
  }

  /** {@link ResponseProtectionContract} on {@link #target()}. */
  @Nested
  public class Protection extends ResponseProtectionContract {
    @Override
    protected TransactionalTarget target() {
      return AllTransactionalContracts.this.target();
    }
  }

  /** {@link RunnerContract} on {@link #target()}. */
  @Nested
  public class Runner extends RunnerContract {
    @Override
    protected TransactionalTarget target() {
      return AllTransactionalContracts.this.target();
    }
  }

  /** {@link InProgressContract} on {@link #target()}. */
  @Nested
  public class InProgress extends InProgressContract {
    @Override
    protected TransactionalTarget target() {
      return AllTransactionalContracts.this.target();
    }
  }
}
