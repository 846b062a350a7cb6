package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Part of the {@linkplain TransactionalContract transactional contract}: the status of a key
 * ({@link dev.idem.core.KeyStatusReader}): absent, in progress or completed, read without waiting
 * for a running operation's claim.
 *
 * <p>A store's test runs it by subclassing (usually as a JUnit {@code @Nested} class, see {@link
 * TransactionalContract}) and returning its database and write order from {@link #target()}.
 */
public abstract class KeyStatusContract extends TransactionalContract {

  @Test
  void theKeyStatusIsAbsentThenCompletedWithTheStoredStatusAndItsTimes() throws Exception {
    IdempotentRequest request = request("alice", "k-status", "{\"value\":42}");
    try (Connection c = database().open()) {
      assertThat(idem.status(c, request.scope(), request.key())).isEqualTo(KeyStatus.absent());
      create(c, request, "{\"value\":42}");
      KeyStatus status = idem.status(c, request.scope(), request.key());
      assertThat(status).isInstanceOf(KeyStatus.Completed.class);
      KeyStatus.Completed completed = (KeyStatus.Completed) status;
      assertThat(completed.status()).isEqualTo(201);
      assertThat(completed.fingerprint()).isEqualTo(request.fingerprint());
      assertThat(completed.completedAt()).isNotNull();
      // kept at least the retention after completion, at most the claim's margin longer
      assertThat(Duration.between(completed.completedAt(), completed.expiresAt()))
          .isGreaterThanOrEqualTo(idem.retention()).isLessThanOrEqualTo(idem.retention().plus(JdbcIdempotency.EXPIRY_MARGIN));
      assertThat(idem.status(c, Scope.of("bob", "POST /things"), request.key())).as("another principal's key").isEqualTo(KeyStatus.absent());
      assertThat(idem.status(c, Scope.of("alice", "POST /other"), request.key())).as("another operation's key").isEqualTo(KeyStatus.absent());
    }
    assertThat(invocations).as("reading a status runs nothing").hasValue(1);
  }

  @Test
  void aStoredClientErrorReadsAsCompletedWithThatStatus() throws Exception {
    IdempotentRequest request = request("alice", "k-status-422", "{}");
    try (Connection c = database().open()) {
      idem.execute(c, request, conn -> StoredResponse.of(422, "{\"error\":\"invalid\"}"));
      assertThat(((KeyStatus.Completed) idem.status(c, request.scope(), request.key())).status()).isEqualTo(422);
    }
  }

  @Test
  void anExpiredKeyAndAnOrphanedClaimReadAsAbsent() throws Exception {
    IdempotentRequest expired = request("alice", "k-status-expired", "{}");
    IdempotentRequest orphan = request("alice", "k-status-orphan", "{}");
    try (Connection c = database().open()) {
      create(c, expired, "{}");
      try (Statement st = c.createStatement()) {
        st.executeUpdate("UPDATE " + idem.table() + " SET expires_at = expires_at - 100000000000");
      }
      assertThat(idem.status(c, expired.scope(), expired.key())).isEqualTo(KeyStatus.absent());
      try (PreparedStatement ps = c.prepareStatement(
          "INSERT INTO " + idem.table() + " (principal, operation, idem_key, fingerprint, state, created_at, expires_at)"
              + " VALUES (?, ?, ?, ?, 'IN_PROGRESS', 0, 9000000000000)")) {
        ps.setString(1, orphan.scope().principal());
        ps.setString(2, orphan.scope().operation());
        ps.setString(3, orphan.key().value());
        ps.setString(4, orphan.fingerprint().hex());
        ps.executeUpdate();
      }
      assertThat(idem.status(c, orphan.scope(), orphan.key())).as("a claim a broken transaction left").isEqualTo(KeyStatus.absent());
    }
  }

  /**
   * A transactional claim is invisible before its commit: the status of a running operation reads
   * as absent, and the read neither waits for the claim's lock nor takes one.
   */
  @Test
  void theStatusOfARunningTransactionalOperationIsReadWithoutWaitingForItsClaim() throws Exception {
    IdempotentRequest request = request("alice", "k-status-running", "{}");
    try (Connection c = database().open()) {
      idem.createSchema(c);
    }
    CountDownLatch inEffect = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<Outcome> running = pool.submit(() -> {
        try (Connection c = database().open()) {
          return idem.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            long id = effects.insert(conn, "t", "{}");
            inEffect.countDown();
            finish.await(30, TimeUnit.SECONDS);
            return StoredResponse.of(201, "{\"id\":" + id + "}");
          });
        }
      });
      assertThat(inEffect.await(30, TimeUnit.SECONDS)).isTrue();
      ExecutorService reader = Executors.newSingleThreadExecutor();
      try {
        Future<KeyStatus> read = reader.submit(() -> {
          try (Connection c = database().open()) {
            return idem.status(c, request.scope(), request.key());
          }
        });
        assertThat(read.get(10, TimeUnit.SECONDS)).isEqualTo(KeyStatus.absent());
      } finally {
        reader.shutdownNow();
      }
      finish.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).replayed()).isFalse();
    } finally {
      finish.countDown();
      pool.shutdownNow();
    }
    try (Connection c = database().open()) {
      assertThat(idem.status(c, request.scope(), request.key())).isInstanceOf(KeyStatus.Completed.class);
    }
  }

  @Test
  void aLeaseModeClaimInTheSameTableReadsAsInProgressWithItsLease() throws Exception {
    try (Connection c = database().open()) {
      idem.createSchema(c);
    }
    JdbcLeaseStore leases = JdbcLeaseStore.builder(database().dataSource()).table(idem.table()).build();
    IdempotentRequest request = request("alice", "k-status-lease", "{}");
    leases.claim(request, "owner-1", Duration.ofSeconds(30), Duration.ofMinutes(5));
    for (KeyStatusReader reader : List.<KeyStatusReader>of(leases, builder().table(idem.table()).dataSource(database().dataSource()).build())) {
      KeyStatus status = reader.status(request.scope(), request.key());
      assertThat(status).isInstanceOf(KeyStatus.InProgress.class);
      KeyStatus.InProgress inProgress = (KeyStatus.InProgress) status;
      assertThat(inProgress.leaseRemaining()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(30));
      assertThat(inProgress.fingerprint()).isEqualTo(request.fingerprint());
    }
  }
}
