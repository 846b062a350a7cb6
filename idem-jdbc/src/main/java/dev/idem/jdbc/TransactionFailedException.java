package dev.idem.jdbc;

import dev.idem.core.IdemStoreException;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A {@link TransactionRunner}'s transaction could not begin, or did not commit after its work
 * returned. Thrown by runners, read by {@link TransactionalIdempotency}; the cause is the
 * database's or the transaction manager's failure.
 */
public final class TransactionFailedException extends IdemStoreException {
  private static final long serialVersionUID = 1L;

  /** Where the transaction failed. */
  public enum Stage {
    /** No transaction could begin (no connection, say): the work did not run. */
    BEGIN,
    /** The work returned and the commit failed: see the cause for whether it may have committed. */
    COMMIT,
    /** The work returned, but the transaction had been marked rollback-only and was rolled back. */
    ROLLBACK_ONLY
  }

  private final Stage stage;

  /**
   * @param stage where it failed, never {@code null}
   * @param message what failed, never {@code null}
   * @param cause the underlying failure, or {@code null}
   */
  public TransactionFailedException(Stage stage, String message, @Nullable Throwable cause) {
    super(message, cause);
    this.stage = Objects.requireNonNull(stage, "stage");
  }

  /** @return where the transaction failed, never {@code null} */
  public Stage stage() {
    return stage;
  }
}
