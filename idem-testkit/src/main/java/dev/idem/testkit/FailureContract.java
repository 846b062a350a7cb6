package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.Effect;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.Dialect;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Part of the {@linkplain TransactionalContract transactional contract}: failures and rollbacks: a
 * failure answer, an exception or a caught SQL error rolls back what must not stay and stores what
 * must; an effect that commits on its own is refused; a broken transaction's orphaned claim is
 * taken over.
 *
 * <p>A store's test runs it by subclassing (usually as a JUnit {@code @Nested} class, see {@link
 * TransactionalContract}) and returning its database and write order from {@link #target()}.
 */
public abstract class FailureContract extends TransactionalContract {

  /**
   * Regression: on PostgreSQL a handler whose INSERT hit a unique violation, caught it and answered
   * {@code 409 email already registered} failed every attempt with "current transaction is aborted"
   * (25P02), which HTTP reported as 503 store-unavailable. Its answer must reach the caller and be
   * stored on every database, in a transaction Idem owns and in the caller's.
   */
  @Test
  void aHandlerThatCatchesItsOwnUniqueViolationAnswersAndItsAnswerIsStored() throws Exception {
    String users = "users_" + suffix;
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + users + " (email VARCHAR(100) PRIMARY KEY)");
      st.execute("INSERT INTO " + users + " (email) VALUES ('ann@example.com')");
      if (Dialect.detect(c).ddlCommitsTransaction()) {
        idem.createSchema(c); // MySQL's and H2's DDL would commit the caller's transaction below
      }
    }
    try (Connection c = database().open()) {
      for (boolean callersTransaction : new boolean[] {false, true}) {
        IdempotentRequest request = request("alice", "k-signup-" + callersTransaction, "{\"email\":\"ann@example.com\"}");
        c.setAutoCommit(!callersTransaction);
        Outcome first = idem.execute(c, request, connCtx -> register(connCtx.connection(), users, "ann@example.com"));
        Outcome again = idem.execute(c, request, conn -> {
          throw new AssertionError("a stored answer must be replayed, not run again");
        });
        if (callersTransaction) {
          c.commit();
          c.setAutoCommit(true);
        }
        String what = callersTransaction ? "in the caller's transaction" : "in Idem's transaction";
        assertThat(first.replayed()).as(what).isFalse();
        assertThat(first.stored()).as(what).isTrue();
        assertThat(first.response().status()).as(what).isEqualTo(409);
        assertThat(first.response().bodyAsString()).as(what).isEqualTo("email already registered");
        assertThat(again.replayed()).as(what).isTrue();
        assertThat(again.response().status()).as(what).isEqualTo(409);
      }
      assertThat(recordCount(c)).isEqualTo(2);
    } finally {
      try (Connection c = database().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + users);
      }
    }
  }

  /**
   * The same handler, answering its own failure (a 503 of its own) after the caught error: the
   * caller gets that answer, never a store failure, and nothing is stored.
   */
  @Test
  void aHandlersOwnFailureAnswerAfterACaughtSqlErrorIsReturnedAsItIs() throws Exception {
    String users = "users_" + suffix;
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + users + " (email VARCHAR(100) PRIMARY KEY)");
      st.execute("INSERT INTO " + users + " (email) VALUES ('ann@example.com')");
      idem.createSchema(c);
    }
    try (Connection c = database().open()) {
      for (boolean callersTransaction : new boolean[] {false, true}) {
        IdempotentRequest request = request("alice", "k-busy-" + callersTransaction, "{}");
        c.setAutoCommit(!callersTransaction);
        Outcome outcome = idem.execute(c, request, connCtx -> {
          Connection conn = connCtx.connection();
          try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + users + " (email) VALUES ('ann@example.com')")) {
            ps.executeUpdate();
            return StoredResponse.of(201, "created");
          } catch (SQLException e) {
            return StoredResponse.of(503, "our own outage page");
          }
        });
        if (callersTransaction) {
          c.rollback(); // a released answer: the caller rolls its transaction back
          c.setAutoCommit(true);
        }
        assertThat(outcome.response().status()).isEqualTo(503);
        assertThat(outcome.response().bodyAsString()).isEqualTo("our own outage page");
        assertThat(outcome.stored()).isFalse();
      }
      assertThat(recordCount(c)).isZero();
    } finally {
      try (Connection c = database().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + users);
      }
    }
  }

  /**
   * A handler that answers success after catching an SQL error: on PostgreSQL the error aborted
   * its transaction, so its writes cannot commit and a 201 would describe an effect that did not
   * happen: refused, nothing stored, the key free for a retry. Elsewhere the failed statement alone
   * was undone, and the answer is stored with the rest of the effect.
   */
  @Test
  void aSuccessAnswerAfterACaughtSqlErrorIsStoredOnlyWhereItsWritesCommit() throws Exception {
    String users = "users_" + suffix;
    IdempotentRequest request = request("alice", "k-swallow", "{}");
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + users + " (email VARCHAR(100) PRIMARY KEY)");
      st.execute("INSERT INTO " + users + " (email) VALUES ('ann@example.com')");
      Effect swallowing = ctx -> {
        Connection conn = ctx.connection();
        long id = effects.insert(conn, "t", "{}");
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + users + " (email) VALUES ('ann@example.com')")) {
          ps.executeUpdate();
        } catch (SQLException ignored) {
          // the handler's bug: it carries on as if nothing happened
        }
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      };
      if (Dialect.detect(c).abortsTransactionOnError()) {
        assertThatThrownBy(() -> idem.execute(c, request, swallowing))
            .isInstanceOf(EffectFailedException.class)
            .hasMessageContaining("aborted");
        assertThat(recordCount(c)).isZero();
        assertThat(effectCount()).isZero();
      } else {
        Outcome outcome = idem.execute(c, request, swallowing);
        assertThat(outcome.stored()).isTrue();
        assertThat(effectCount()).isEqualTo(1);
      }
      assertThat(c.getAutoCommit()).isTrue();
    } finally {
      try (Connection c = database().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + users);
      }
    }
  }

  /**
   * A caller's transaction that an SQL error of the caller's own aborted before Idem ran
   * (PostgreSQL): Idem's lookup fails, and that is the caller's error, never reported as a store
   * outage ("retry later").
   */
  @Test
  void aCallersTransactionAbortedBeforeIdemRunsIsTheCallersErrorNotAStoreOutage() throws Exception {
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      Assumptions.assumeTrue(Dialect.detect(c).abortsTransactionOnError(), "only PostgreSQL aborts a transaction on an error");
      idem.createSchema(c);
      c.setAutoCommit(false);
      try {
        st.execute("SELECT 1/0");
      } catch (SQLException expected) {
        // the caller's own error: the transaction is aborted now
      }
      assertThatThrownBy(() -> create(c, request("alice", "k-aborted", "{}"), "{}"))
          .isInstanceOf(IllegalStateException.class)
          .isNotInstanceOf(IdemStoreException.class)
          .hasMessageContaining("already aborted");
      c.rollback();
      c.setAutoCommit(true);
    }
    assertThat(invocations).hasValue(0);
  }

  @Test
  void aTransientFailureResponseIsReleasedWithItsEffectSoARetryRunsAgain() throws Exception {
    IdempotentRequest request = request("alice", "k-503", "{}");
    try (Connection c = database().open()) {
      for (int status : new int[] {503, 500, 429}) {
        Outcome failed = idem.execute(c, request, connCtx -> {
          Connection conn = connCtx.connection();
          effects.insert(conn, "t", "{}");
          return StoredResponse.of(status, "try later");
        });
        assertThat(failed.stored()).as("status %d", status).isFalse();
        assertThat(failed.response().status()).isEqualTo(status);
        assertThat(recordCount(c)).isZero();
      }
      assertThat(effectCount()).as("each released response took its effect with it").isZero();
      Outcome retry = create(c, request, "{}");
      assertThat(retry.replayed()).isFalse();
      assertThat(retry.stored()).isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void anEffectThatThrowsRollsBackTheEffectAndTheClaimSoARetryRunsAgain() throws Exception {
    IdempotentRequest request = request("alice", "k-fail", "{\"value\":42}");
    try (Connection c = database().open()) {
      assertThatThrownBy(() -> idem.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            effects.insert(conn, "t", "{\"value\":42}");
            throw new IllegalStateException("payment declined by a bug");
          }))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("payment declined by a bug");
      assertThat(effectCount()).isZero();
      assertThat(recordCount(c)).isZero();
      assertThat(c.getAutoCommit()).isTrue();

      Outcome retry = create(c, request, "{\"value\":42}");
      assertThat(retry.replayed()).isFalse();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void aCheckedExceptionFromTheEffectIsWrappedAndRolledBack() throws Exception {
    try (Connection c = database().open()) {
      assertThatThrownBy(() -> idem.execute(c, request("alice", "k-checked", "{}"), connCtx -> {
            Connection conn = connCtx.connection();
            effects.insert(conn, "t", "{}");
            throw new IOException("disk full");
          }))
          .isInstanceOf(EffectFailedException.class)
          .hasCauseInstanceOf(IOException.class);
      assertThat(recordCount(c)).isZero();
    }
    assertThat(effectCount()).isZero();
  }

  @Test
  void anEffectThatReturnsNullIsAProgrammingErrorAndLeavesNothing() throws Exception {
    try (Connection c = database().open()) {
      assertThatThrownBy(() -> idem.execute(c, request("alice", "k-null", "{}"), connCtx -> {
            Connection conn = connCtx.connection();
            effects.insert(conn, "t", "{}");
            return null;
          }))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("returned null");
      assertThat(recordCount(c)).isZero();
    }
    assertThat(effectCount()).isZero();
  }

  @Test
  void anEffectThatCommitsOnItsOwnIsRefusedAndLeavesNoHalfWrittenRecord() throws Exception {
    IdempotentRequest request = request("alice", "k-self-commit", "{}");
    try (Connection c = database().open()) {
      assertThatThrownBy(() -> idem.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            effects.insert(conn, "t", "{}");
            conn.commit();
            throw new IllegalStateException("effect fails after its own commit");
          }))
          .isInstanceOf(EffectFailedException.class)
          .hasMessageContaining("must not call commit()");
      assertThatThrownBy(() -> idem.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            conn.setAutoCommit(true);
            return StoredResponse.of(201, "{}");
          }))
          .isInstanceOf(EffectFailedException.class)
          .hasMessageContaining("must not call setAutoCommit()");
      assertThat(recordCount(c)).isZero();
      assertThat(c.getAutoCommit()).isTrue();
      assertThat(create(c, request, "{}").replayed()).as("the retry executes").isFalse();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void anOrphanedClaimLeftByABrokenTransactionIsTakenOverNotReportedInProgress() throws Exception {
    IdempotentRequest request = request("alice", "k-orphan", "{}");
    try (Connection c = database().open()) {
      idem.createSchema(c);
      try (PreparedStatement ps = c.prepareStatement(
          "INSERT INTO " + idem.table() + " (principal, operation, idem_key, fingerprint, state, created_at, expires_at)"
              + " VALUES (?, ?, ?, ?, 'IN_PROGRESS', 0, 9000000000000)")) {
        ps.setString(1, request.scope().principal());
        ps.setString(2, request.scope().operation());
        ps.setString(3, request.key().value());
        ps.setString(4, request.fingerprint().hex());
        ps.executeUpdate();
      }
      Outcome outcome = create(c, request, "{}");
      assertThat(outcome.replayed()).isFalse();
      assertThat(create(c, request, "{}").replayed()).isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
  }
}
