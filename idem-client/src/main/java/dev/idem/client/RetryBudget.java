package dev.idem.client;

/**
 * A budget of retries shared by many operations, so that a failing dependency is not hammered by a
 * retry storm: each first attempt deposits {@code ratio} of a token, each retry withdraws one
 * token, and a retry without a whole token is not made (the operation ends with what it has). The
 * balance never exceeds {@code capacity}; it starts full.
 *
 * <p>With ratio 0.1, at most about one retry per ten operations is made once the initial capacity is
 * spent. Thread-safe.
 */
public final class RetryBudget {

  private static final long SCALE = 1000;

  private final long capacity;
  private final long deposit;
  private final boolean unlimited;
  private long balance;

  private RetryBudget(double ratio, int capacity, boolean unlimited) {
    this.capacity = capacity * SCALE;
    this.deposit = Math.round(ratio * SCALE);
    this.unlimited = unlimited;
    this.balance = this.capacity;
  }

  /**
   * @param ratio tokens deposited per operation, from 0 to 1000
   * @param capacity the most tokens (retries) the budget holds, from 1 to 1 000 000; also the
   *     starting balance
   * @throws IllegalArgumentException if out of range
   */
  public static RetryBudget create(double ratio, int capacity) {
    if (!(ratio >= 0 && ratio <= 1000)) {
      throw new IllegalArgumentException("ratio must be between 0 and 1000, was " + ratio);
    }
    if (capacity < 1 || capacity > 1_000_000) {
      throw new IllegalArgumentException("capacity must be between 1 and 1000000, was " + capacity);
    }
    return new RetryBudget(ratio, capacity, false);
  }

  /** @return a budget that never refuses a retry */
  public static RetryBudget unlimited() {
    return new RetryBudget(0, 1, true);
  }

  /** Records a new operation: deposits the ratio. */
  public synchronized void onOperation() {
    balance = Math.min(capacity, balance + deposit);
  }

  /** @return {@code true} and withdraws a token if a retry is allowed; {@code false} otherwise */
  public synchronized boolean tryRetry() {
    if (unlimited) {
      return true;
    }
    if (balance < SCALE) {
      return false;
    }
    balance -= SCALE;
    return true;
  }

  /** @return the whole tokens available now */
  public synchronized long available() {
    return unlimited ? Long.MAX_VALUE : balance / SCALE;
  }
}
