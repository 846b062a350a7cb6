package dev.idem.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Lease-mode answers that mean "the handler ran, its completion is not ours to store": they are
 * redelivered whatever the delivery count, never dead-lettered, because the redelivery replays or
 * recovers. No broker needed: the verdict is what an adapter acts on.
 */
class LeaseModeVerdictTest {

  /** Delegates to an in-memory store, except for {@link #complete}. */
  private abstract static class CompleteFails implements LeaseStore {
    final InMemoryLeaseStore real = new InMemoryLeaseStore();

    @Override
    public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
      return real.claim(request, ownerToken, lease, retention);
    }

    @Override
    public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
      return real.release(scope, key, ownerToken);
    }

    @Override
    public long purgeExpired(int batchSize) {
      return real.purgeExpired(batchSize);
    }
  }

  private static InboundMessage lastDelivery() {
    return new InboundMessage("mail-1", Map.of(), "hello".getBytes(StandardCharsets.UTF_8), 3, "test");
  }

  private static IdempotentConsumer consumer(LeaseStore store, AtomicInteger runs) {
    LeaseIdempotency leases = LeaseIdempotency.builder(store).lease(Duration.ofMillis(300)).build();
    return IdempotentConsumer.leaseBuilder("mailer", leases, (context, m) -> runs.incrementAndGet()).maxDeliveries(3).build();
  }

  @Test
  void aLeaseLostBeforeTheCompletionIsRedeliveredNotDeadLetteredOnTheLastDelivery() {
    AtomicInteger runs = new AtomicInteger();
    LeaseStore lost = new CompleteFails() {
      @Override
      public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
        return false; // another owner took the claim over
      }
    };
    Verdict verdict = consumer(lost, runs).process(lastDelivery());
    assertThat(runs.get()).isEqualTo(1);
    assertThat(verdict.action()).isEqualTo(Verdict.Action.RETRY);
    assertThat(verdict.reason()).contains("lease was taken over");
  }

  @Test
  void aCompletionThatCannotBeStoredIsRedeliveredNotDeadLetteredOnTheLastDelivery() {
    AtomicInteger runs = new AtomicInteger();
    LeaseStore down = new CompleteFails() {
      @Override
      public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
        throw new IdemStoreException("connection refused", null);
      }
    };
    Verdict verdict = consumer(down, runs).process(lastDelivery());
    assertThat(runs.get()).isEqualTo(1);
    assertThat(verdict.action()).isEqualTo(Verdict.Action.RETRY);
    assertThat(verdict.reason()).contains("completion could not be stored");
  }

  @Test
  void aHandlerFailureOnTheLastDeliveryIsDeadLetteredAndReleasesTheClaim() {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    LeaseIdempotency leases = LeaseIdempotency.builder(store).build();
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer failing = IdempotentConsumer.leaseBuilder("mailer", leases, (context, m) -> {
      runs.incrementAndGet();
      throw new IOException("mail server said 554");
    }).maxDeliveries(3).build();
    Verdict verdict = failing.process(lastDelivery());
    assertThat(verdict.action()).isEqualTo(Verdict.Action.DEAD_LETTER);
    assertThat(verdict.reason()).contains("failed on delivery 3 of at most 3").contains("java.io.IOException: mail server said 554");
    // released, not left to expire: the next run of the same message is not refused as in progress
    Verdict again = failing.process(new InboundMessage("mail-1", Map.of(), "hello".getBytes(StandardCharsets.UTF_8), 1, "test"));
    assertThat(again.action()).isEqualTo(Verdict.Action.RETRY);
    assertThat(again.reason()).contains("mail server said 554");
    assertThat(runs.get()).isEqualTo(2);
  }

  /**
   * Regression: a lease store that failed on the last allowed delivery dead-lettered the message
   * ("failed on delivery 3 of at most 3: ... IdemStoreException"): Idem's store failing is not the
   * message's failure.
   */
  @Test
  void aLeaseStoreFailureOnTheLastDeliveryIsRetriedAfterABackoffNotDeadLettered() {
    AtomicInteger runs = new AtomicInteger();
    LeaseStore down = new CompleteFails() {
      @Override
      public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
        throw new IdemStoreException("connection refused", null);
      }

      @Override
      public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
        return real.complete(scope, key, ownerToken, response, retention);
      }
    };
    IdempotentConsumer consumer = consumer(down, runs);
    Verdict first = consumer.process(lastDelivery());
    Verdict second = consumer.process(lastDelivery());
    assertThat(runs.get()).isZero();
    assertThat(first.action()).isEqualTo(Verdict.Action.RETRY);
    assertThat(first.storeUnavailable()).isTrue();
    assertThat(first.reason()).contains("connection refused");
    assertThat(first.retryAfter()).isEqualTo(Duration.ofMillis(100));
    assertThat(second.retryAfter()).isEqualTo(Duration.ofMillis(200)); // doubles while the store stays down
  }

  @Test
  void aHandlersOwnIdemStoreExceptionCountsAndIsDeadLetteredOnTheLastDelivery() {
    LeaseIdempotency leases = LeaseIdempotency.builder(new InMemoryLeaseStore()).build();
    IdempotentConsumer failing = IdempotentConsumer.leaseBuilder("mailer", leases, (context, m) -> {
      throw new IdemStoreException("another service's idempotency store said no", null);
    }).maxDeliveries(3).build();
    Verdict verdict = failing.process(lastDelivery());
    assertThat(verdict.action()).isEqualTo(Verdict.Action.DEAD_LETTER);
    assertThat(verdict.storeUnavailable()).isFalse();
    assertThat(verdict.reason()).contains("failed on delivery 3 of at most 3").contains("another service's");
  }

  /**
   * Regression: in lease mode an answer the engine's response policy does not store (a policy that
   * releases the consumer's 200) is a handling that happened, outside any transaction: it used to
   * be acknowledged, and became a counted failure ("the handling was not stored"), so the broker
   * redelivered it and the handler's outside effect ran again on every delivery up to the dead
   * letter.
   */
  @Test
  void aLeaseModeHandlingTheResponsePolicyReleasesIsAcknowledgedNotRunAgain() {
    AtomicInteger runs = new AtomicInteger();
    LeaseIdempotency leases = LeaseIdempotency.builder(new InMemoryLeaseStore()).responsePolicy(response -> false).build();
    IdempotentConsumer consumer = IdempotentConsumer.leaseBuilder("mailer", leases, (context, m) -> runs.incrementAndGet())
        .maxDeliveries(3).build();
    Verdict verdict = consumer.process(new InboundMessage("mail-1", Map.of(), "hello".getBytes(StandardCharsets.UTF_8), 1, "test"));
    assertThat(verdict.action()).isEqualTo(Verdict.Action.ACK);
    assertThat(verdict.outcome()).isNotNull();
    assertThat(runs.get()).isEqualTo(1);
  }

  /** As before the engine's results were switched on: a release that failed is the store's failure, not counted. */
  @Test
  void aLeaseModeReleaseThatFailsAfterTheHandlerRanIsAStoreFailureNotCounted() {
    AtomicInteger runs = new AtomicInteger();
    LeaseStore releaseFails = new CompleteFails() {
      @Override
      public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
        return real.complete(scope, key, ownerToken, response, retention);
      }

      @Override
      public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
        throw new IdemStoreException("connection refused", null);
      }
    };
    LeaseIdempotency leases = LeaseIdempotency.builder(releaseFails).responsePolicy(response -> false).build();
    IdempotentConsumer consumer = IdempotentConsumer.leaseBuilder("mailer", leases, (context, m) -> runs.incrementAndGet())
        .maxDeliveries(3).build();
    Verdict verdict = consumer.process(lastDelivery());
    assertThat(verdict.action()).isEqualTo(Verdict.Action.RETRY);
    assertThat(verdict.storeUnavailable()).isTrue();
    assertThat(verdict.reason()).contains("connection refused");
    assertThat(runs.get()).isEqualTo(1);
  }
}
