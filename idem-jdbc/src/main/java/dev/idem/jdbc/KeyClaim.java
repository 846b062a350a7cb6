package dev.idem.jdbc;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.jdbc.internal.ConflictRetry;
import dev.idem.jdbc.internal.ConflictRetry.Round;
import dev.idem.jdbc.internal.KeyRow;
import dev.idem.jdbc.internal.LogRef;
import dev.idem.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import org.jspecify.annotations.Nullable;

/**
 * The claim of a key in an open transaction, the first step of {@link JoinedTransaction}: an insert of the key's row without a response, which waits on the key's
 * primary key for a concurrent writer of the same key, and what it found when it inserted
 * nothing. A record that blocked the claim but is gone when read (it expired meanwhile, or was a
 * claim a broken transaction left) is claimed again, up to {@link ConflictRetry#MAX_ATTEMPTS}
 * times. Stateless and thread-safe.
 */
final class KeyClaim {

  private KeyClaim() {}

  /** What the claim found. */
  sealed interface Result permits Claimed, Found, Busy, Conflict {}

  /** The key's row is this transaction's: run the effect. */
  record Claimed() implements Result {}

  /** @param record the key's live record, which answers the request (not orphaned) */
  record Found(KeyRow record) implements Result {}

  /** A bounded claim gave up on a concurrent attempt's row held by a transaction still open. */
  record Busy() implements Result {}

  /**
   * @param cause a deadlock or serialization failure (SQLState class 40): the database rolled the
   *     transaction back
   */
  record Conflict(SQLException cause) implements Result {}

  private static final Claimed CLAIMED = new Claimed();
  private static final Busy BUSY = new Busy();

  /**
   * @param savepoint on PostgreSQL, whether to set {@code KeyTableSql.EFFECT_SAVEPOINT} right after
   *     the claim, in its round trip
   * @param wait the claim's lock-wait bound ({@link EngineSettings#claimWait}), or {@code null}
   * @param savepoints when not {@code null}, counts the savepoints the claim statements set
   * @return what the claim found, never {@code null}
   * @throws IdemStoreException if a claim statement failed otherwise, or the key's record kept
   *     changing for every round
   */
  static Result claim(EngineSettings settings, Connection connection, KeyTable.Statements sql, IdempotentRequest request,
      boolean savepoint, @Nullable String wait, int @Nullable [] savepoints) {
    return ConflictRetry.roundsUnchecked(round -> {
      boolean claimed;
      KeyRow existing;
      try {
        if (round == 0 && sql.sql.lookupAndClaim != null) {
          KeyTable.ClaimAttempt attempt = sql.lookupAndClaim(connection, request, settings.retention(), savepoint, wait);
          count(savepoints);
          claimed = attempt.claimed();
          KeyRow seen = attempt.seen();
          // A live row the read saw answers; none (a duplicate committed between the read and the
          // claim, or the row it saw expired) means reading again, as after a plain claim.
          existing = claimed ? null : seen != null && !seen.orphaned() ? seen : sql.lookupLatest(connection, request);
        } else {
          claimed = sql.claim(connection, request, settings.retention(), savepoint, wait);
          count(savepoints);
          existing = claimed ? null : sql.lookupLatest(connection, request);
        }
      } catch (SQLException e) {
        if (wait != null && sql.sql.isClaimWaitExceeded(e)) {
          // Another attempt with this key holds its row in a transaction still open: it is in
          // progress. On PostgreSQL the error aborted this transaction, which the caller rolls back.
          return Round.done(BUSY);
        }
        if (Transactions.isTransientConflict(e)) {
          return Round.done(new Conflict(e));
        }
        throw settings.storeFailure("claim failed", e);
      }
      if (claimed) {
        return Round.done(CLAIMED);
      }
      if (existing != null && !existing.orphaned()) {
        return Round.done(new Found(existing));
      }
      // The live record that blocked the claim expired between the claim and the read, or was an
      // orphaned claim: claim again.
      return Round.again(new IdemStoreException(
          "could not claim " + LogRef.of(request.scope(), request.key()) + " after " + ConflictRetry.MAX_ATTEMPTS + " rounds", null));
    });
  }

  private static void count(int @Nullable [] savepoints) {
    if (savepoints != null) {
      savepoints[0]++;
    }
  }
}
