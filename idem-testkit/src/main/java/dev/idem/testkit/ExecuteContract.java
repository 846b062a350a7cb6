package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.Dialect;
import java.sql.Connection;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Part of the {@linkplain TransactionalContract transactional contract}: one caller's {@code
 * execute} on its own connection: the effect runs once and its answer is replayed byte for byte;
 * keys, scopes and payloads are told apart exactly; the caller's connection and transaction are
 * left as they were.
 *
 * <p>A store's test runs it by subclassing (usually as a JUnit {@code @Nested} class, see {@link
 * TransactionalContract}) and returning its database and write order from {@link #target()}.
 */
public abstract class ExecuteContract extends TransactionalContract {

  @Test
  void lostResponseRetryReplaysTheFirstResultAndStoresOneEffect() throws Exception {
    IdempotentRequest request = request("alice", "k-lost", "{\"value\":42}");
    long first;
    try (Connection c = database().open()) {
      Outcome outcome = create(c, request, "{\"value\":42}");
      first = idOf(outcome);
      assertThat(outcome.replayed()).isFalse();
      // the response is lost here, after the commit; the caller retries with the same key
    }
    try (Connection c = database().open()) {
      Outcome retry = create(c, request, "{\"value\":42}");
      assertThat(retry.replayed()).isTrue();
      assertThat(idOf(retry)).isEqualTo(first);
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void theEffectSeesAnOpenTransactionAndTheCallerGetsAutoCommitBack() throws Exception {
    try (Connection c = database().open()) {
      boolean[] effectAutoCommit = {true};
      idem.execute(c, request("alice", "k-autocommit", "{}"), connCtx -> {
        Connection conn = connCtx.connection();
        effectAutoCommit[0] = conn.getAutoCommit();
        return StoredResponse.of(201, "{\"id\":" + effects.insert(conn, "t", "{}") + "}");
      });
      assertThat(effectAutoCommit[0]).as("auto-commit as the effect sees it").isFalse();
      assertThat(c.getAutoCommit()).as("auto-commit restored").isTrue();
      // the connection is really back in auto-commit: a write outside Idem is visible elsewhere
      effects.insert(c, "outside", "{}");
      try (Connection other = database().open()) {
        assertThat(effects.count(other, "outside")).isEqualTo(1);
      }
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void replayAnswersACompletedKeyWithoutRunningAnythingAndIsEmptyForANewKey() throws Exception {
    IdempotentRequest request = request("alice", "k-replay-only", "{\"value\":1}");
    try (Connection c = database().open()) {
      assertThat(idem.replay(c, request)).isEmpty();
      Outcome first = create(c, request, "{\"value\":1}");
      Outcome replayed = idem.replay(c, request).orElseThrow();
      assertThat(replayed.replayed()).isTrue();
      assertThat(idOf(replayed)).isEqualTo(idOf(first));
      assertThatThrownBy(() -> idem.replay(c, request("alice", "k-replay-only", "{\"value\":2}")))
          .isInstanceOf(IdempotencyKeyReusedException.class);
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void releaseInsideTheCallersTransactionKeepsTheEffectAndForgetsTheKey() throws Exception {
    IdempotentRequest request = request("alice", "k-release", "{}");
    try (Connection c = database().open()) {
      idem.createSchema(c);
      c.setAutoCommit(false);
      create(c, request, "{}");
      assertThat(idem.release(c, request)).isTrue();
      c.commit();
      c.setAutoCommit(true);
      assertThat(idem.replay(c, request)).as("no record: a retry runs again").isEmpty();
      assertThat(create(c, request, "{}").replayed()).isFalse();
    }
    assertThat(effectCount()).as("the released run's effect was kept, and the retry made one more").isEqualTo(2);
  }

  /**
   * Regression: on SQLite an effect that set a savepoint (allowed) left the driver's auto-commit
   * flag off, so the next call took the connection for a caller's transaction, and an effect that
   * failed there committed its partial work and an orphaned claim: a retry made a second effect.
   */
  @Test
  void anEffectThatUsesASavepointLeavesTheConnectionInAutoCommit() throws Exception {
    try (Connection c = database().open()) {
      idem.execute(c, request("alice", "k-savepoint", "{}"), connCtx -> {
        Connection conn = connCtx.connection();
        Savepoint savepoint = conn.setSavepoint();
        effects.insert(conn, "t", "{}");
        conn.releaseSavepoint(savepoint);
        return StoredResponse.of(201, "{}");
      });
      assertThat(c.getAutoCommit()).as("auto-commit after a savepoint in the effect").isTrue();
      IdempotentRequest next = request("alice", "k-after-savepoint", "{}");
      assertThatThrownBy(() -> idem.execute(c, next, connCtx -> {
        Connection conn = connCtx.connection();
        effects.insert(conn, "t", "{}");
        throw new IllegalStateException("fails after its insert");
      })).isInstanceOf(IllegalStateException.class);
      assertThat(idem.replay(c, next)).isEmpty();
    }
    assertThat(effectCount()).as("the failed effect's insert rolled back").isEqualTo(1);
  }

  @Test
  void keyReusedWithAnotherPayloadIsRejectedAndStoresNothingMore() throws Exception {
    try (Connection c = database().open()) {
      create(c, request("alice", "k-reuse", "{\"value\":42}"), "{\"value\":42}");
      IdempotentRequest other = request("alice", "k-reuse", "{\"value\":43}");
      assertThatThrownBy(() -> create(c, other, "{\"value\":43}"))
          .isInstanceOf(IdempotencyKeyReusedException.class)
          .hasMessageContaining("k-reuse");
      assertThat(c.getAutoCommit()).as("auto-commit restored").isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void distinctKeysWithIdenticalPayloadsAreTwoOperations() throws Exception {
    try (Connection c = database().open()) {
      Outcome a = create(c, request("alice", "k-1", "{\"value\":42}"), "{\"value\":42}");
      Outcome b = create(c, request("alice", "k-2", "{\"value\":42}"), "{\"value\":42}");
      assertThat(idOf(a)).isNotEqualTo(idOf(b));
      assertThat(a.replayed()).isFalse();
      assertThat(b.replayed()).isFalse();
    }
    assertThat(effectCount()).isEqualTo(2);
  }

  @Test
  void sameKeyInAnotherScopeIsUnrelated() throws Exception {
    try (Connection c = database().open()) {
      Outcome alice = create(c, request("alice", "shared-key", "{\"value\":42}"), "{\"value\":42}");
      Outcome bob = create(c, request("bob", "shared-key", "{\"value\":42}"), "{\"value\":42}");
      assertThat(bob.replayed()).isFalse();
      assertThat(idOf(bob)).isNotEqualTo(idOf(alice));
    }
    assertThat(effectCount()).isEqualTo(2);
  }

  /**
   * Regression: on MariaDB the key {@code "pad-k1 "} was answered as {@code "pad-k1"} (a 422, or with
   * the same body a replay of the other key's response), and a principal with a trailing space got
   * another tenant's stored response: PAD SPACE collations ({@code utf8mb4_bin} and {@code ascii_bin}
   * too) ignore trailing spaces. Every part of the record's identity must compare byte for byte.
   */
  @Test
  void keysAndPrincipalsThatDifferOnlyByTrailingSpacesCaseOrUnicodeNormalisationAreDistinct() throws Exception {
    List<IdempotentRequest> requests = new ArrayList<>();
    for (String key : new String[] {"pad-k1", "pad-k1 ", "pad-k1  ", "PAD-K1", "Pad-k1"}) {
      requests.add(request(Scope.of("tenant", "POST /things"), key, "{}"));
    }
    // "café" in NFC (U+00E9) and NFD (e + U+0301), a trailing space, another case
    for (String principal : new String[] {"tenant ", "Tenant", "TENANT", "caf\u00e9", "cafe\u0301", "caf\u00e9 "}) {
      requests.add(request(Scope.of(principal, "POST /things"), "pad-k1", "{}"));
    }
    for (String operation : new String[] {"POST /things ", "post /things", "POST /Things", "POST /caf\u00e9", "POST /cafe\u0301"}) {
      requests.add(request(Scope.of("tenant", operation), "pad-k1", "{}"));
    }
    List<Long> ids = new ArrayList<>();
    try (Connection c = database().open()) {
      for (IdempotentRequest r : requests) {
        Outcome outcome = create(c, r, "{}");
        assertThat(outcome.replayed()).as("%s executes", describe(r)).isFalse();
        ids.add(idOf(outcome));
      }
      for (int i = 0; i < requests.size(); i++) {
        Outcome again = create(c, requests.get(i), "{}");
        assertThat(again.replayed()).as("%s replays", describe(requests.get(i))).isTrue();
        assertThat(idOf(again)).as("%s replays its own response", describe(requests.get(i))).isEqualTo(ids.get(i));
      }
      assertThat(recordCount(c)).isEqualTo(requests.size());
    }
    assertThat(ids).doesNotHaveDuplicates();
    assertThat(effectCount()).isEqualTo(requests.size());
  }

  @Test
  void jsonPayloadsThatDifferOnlyInMemberOrderAreTheSameOperation() throws Exception {
    try (Connection c = database().open()) {
      create(c, request("alice", "k-order", "{\"a\":1,\"b\":2}"), "{\"a\":1,\"b\":2}");
      Outcome retry = create(c, request("alice", "k-order", "{ \"b\": 2, \"a\": 1 }"), "{\"a\":1,\"b\":2}");
      assertThat(retry.replayed()).isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void replayReturnsTheStoredResponseByteForByte() throws Exception {
    StoredResponse original =
        StoredResponse.builder(201)
            .header("Content-Type", "application/json")
            .header("Location", "/notes/7")
            .header("ETag", "\"v1\"")
            .body(new byte[] {0, 1, 2, (byte) 0xFF, '{', '}'})
            .build();
    IdempotentRequest request = request("alice", "k-bytes", "{}");
    try (Connection c = database().open()) {
      idem.execute(c, request, conn -> original);
      Outcome replay = idem.execute(c, request, conn -> {
        throw new AssertionError("a replay must not run the effect");
      });
      assertThat(replay.replayed()).isTrue();
      assertThat(replay.response()).isEqualTo(original);
      assertThat(replay.response().body()).containsExactly(original.body());
      assertThat(replay.response().header("etag")).isEqualTo("\"v1\"");
    }
  }

  /**
   * A response as large as the HTTP filter stores by default, with bytes a driver's text protocol
   * must escape, commits with its key and is read back byte for byte.
   */
  @Test
  void aLargeStoredResponseRoundTripsByteExact() throws Exception {
    StoredResponse large = LargeResponses.of(LargeResponses.DEFAULT_LIMIT);
    IdempotentRequest request = request("alice", "k-large", "{}");
    try (Connection c = database().open()) {
      Outcome first = idem.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        effects.insert(conn, "t", "{}");
        return large;
      });
      assertThat(first.stored()).isTrue();
      Outcome replay = idem.execute(c, request, conn -> {
        throw new AssertionError("a replay must not run the effect");
      });
      assertThat(replay.replayed()).isTrue();
      assertThat(replay.response().bodyLength()).isEqualTo(LargeResponses.DEFAULT_LIMIT);
      assertThat(replay.response().body()).as("byte for byte").isEqualTo(large.body());
      assertThat(replay.response()).isEqualTo(large);
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * The record of an answer too large to store (status and header fields, the body's length, no
   * body) commits with the effect and keeps the key completed: a retry runs nothing.
   */
  @Test
  void aResponseWhoseBodyWasNotStoredKeepsTheKeyCompleted() throws Exception {
    StoredResponse record = StoredResponse.builder(201).header("Location", "/files/9").bodyNotStored(2L * 1024 * 1024).build();
    IdempotentRequest request = request("alice", "k-not-stored", "{}");
    try (Connection c = database().open()) {
      Outcome first = idem.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        effects.insert(conn, "t", "{}");
        return record;
      });
      assertThat(first.stored()).isTrue();
      Outcome retry = idem.execute(c, request, conn -> {
        throw new AssertionError("a key whose answer was not stored must not run again");
      });
      assertThat(retry.replayed()).isTrue();
      assertThat(retry.response().bodyStored()).isFalse();
      assertThat(retry.response().status()).isEqualTo(201);
      assertThat(retry.response().answeredBodyLength()).isEqualTo(2L * 1024 * 1024);
      assertThat(retry.response().header("Location")).isEqualTo("/files/9");
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void aStoredClientErrorIsReplayedAsThatStatus() throws Exception {
    IdempotentRequest request = request("alice", "k-404", "{}");
    try (Connection c = database().open()) {
      idem.execute(c, request, conn -> StoredResponse.of(404, "no such account"));
      Outcome replay = idem.execute(c, request, conn -> StoredResponse.of(200, "must not run"));
      assertThat(replay.response().status()).isEqualTo(404);
      assertThat(replay.response().bodyAsString()).isEqualTo("no such account");
    }
  }

  @Test
  void anExpiredRecordCountsAsAbsent() throws Exception {
    IdempotentRequest request = request("alice", "k-expired", "{\"value\":42}");
    try (Connection c = database().open()) {
      long first = idOf(create(c, request, "{\"value\":42}"));
      try (Statement st = c.createStatement()) {
        st.executeUpdate("UPDATE " + idem.table() + " SET expires_at = expires_at - 100000000000");
      }
      Outcome again = create(c, request, "{\"value\":42}");
      assertThat(again.replayed()).isFalse();
      assertThat(idOf(again)).isNotEqualTo(first);
      assertThat(recordCount(c)).isEqualTo(1);
    }
    assertThat(effectCount()).isEqualTo(2);
  }

  @Test
  void aJoinedTransactionIsCommittedOrRolledBackByTheCaller() throws Exception {
    IdempotentRequest request = request("alice", "k-joined", "{\"value\":42}");
    try (Connection c = database().open()) {
      if (Dialect.detect(c).ddlCommitsTransaction()) {
        idem.createSchema(c); // MySQL's and H2's DDL would commit the open transaction, so the table comes first
      }
      c.setAutoCommit(false);
      Outcome outcome = create(c, request, "{\"value\":42}");
      assertThat(outcome.replayed()).isFalse();
      c.rollback();
      c.setAutoCommit(true);
    }
    assertThat(effectCount()).as("the caller's rollback removed the effect").isZero();
    try (Connection c = database().open()) {
      Outcome retry = create(c, request, "{\"value\":42}");
      assertThat(retry.replayed()).as("and the claim with it").isFalse();
      c.setAutoCommit(false);
      Outcome replay = create(c, request, "{\"value\":42}");
      assertThat(replay.replayed()).as("a joined transaction replays too").isTrue();
      c.commit();
      c.setAutoCommit(true);
      assertThat(recordCount(c)).isEqualTo(1);
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * Regression: a caller that began its transaction with SQL ({@code START TRANSACTION} on MySQL,
   * {@code BEGIN} on PostgreSQL) on a connection left in auto-commit mode had it committed by Idem:
   * on MySQL Idem's own {@code START TRANSACTION} commits an open transaction, and Idem's commit
   * then committed the effect. Where the driver reports the session's transaction (pgjdbc, MariaDB
   * Connector/J, MySQL Connector/J) Idem joins it as the caller's: the caller's rollback removes its own write, the
   * effect and the claim.
   */
  @Test
  void aTransactionTheCallerBeganWithSqlIsJoinedAndNeverCommittedByIdem() throws Exception {
    IdempotentRequest request = request("alice", "k-begun-by-sql", "{\"value\":7}");
    try (Connection c = database().open()) {
      Dialect dialect = Dialect.detect(c);
      org.junit.jupiter.api.Assumptions.assumeTrue(dialect.equals(Dialect.postgresql()) || dialect.equals(Dialect.mysql()),
          "only pgjdbc and the MySQL dialect's drivers report a transaction begun with SQL");
      idem.createSchema(c); // MySQL's DDL would commit the open transaction, so the table comes first
      assertThat(c.getAutoCommit()).isTrue();
      try (Statement st = c.createStatement()) {
        st.execute(dialect.equals(Dialect.mysql()) ? "START TRANSACTION" : "BEGIN");
      }
      effects.insert(c, "callers-own", "{}");
      Outcome outcome = create(c, request, "{\"value\":7}");
      assertThat(outcome.replayed()).isFalse();
      try (Statement st = c.createStatement()) {
        st.execute("ROLLBACK");
      }
      assertThat(c.getAutoCommit()).isTrue();
    }
    try (Connection other = database().open()) {
      assertThat(effects.count(other, "callers-own")).as("the caller's own write, rolled back by the caller").isZero();
      assertThat(recordCount(other)).as("the claim, rolled back with it").isZero();
    }
    assertThat(effectCount()).as("the effect, rolled back with it").isZero();
  }
}
