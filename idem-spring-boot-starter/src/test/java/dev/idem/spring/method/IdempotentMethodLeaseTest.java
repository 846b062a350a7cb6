package dev.idem.spring.method;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentCalls;
import dev.idem.spring.internal.Jackson2JsonCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.springframework.aop.framework.ProxyFactory;

/** {@link Idempotent} methods in lease mode when the store cannot record their result. */
class IdempotentMethodLeaseTest {

  /** Charges at most once per key: on a recovery it looks the earlier charge up by the key. */
  public static class Charges {
    final Map<String, Integer> byKey = new ConcurrentHashMap<>();
    final List<Boolean> recoveries = new ArrayList<>();

    @Idempotent(operation = "charge")
    public Map<String, Object> charge(@Idempotent.Key String key, long cents) {
      boolean recovery = IdempotentCalls.currentLeaseContext().orElseThrow().recovery();
      recoveries.add(recovery);
      int id = recovery && byKey.containsKey(key) ? byKey.get(key) : byKey.computeIfAbsent(key, k -> byKey.size() + 1);
      return Map.of("charge", id, "cents", cents);
    }
  }

  volatile boolean completesFail;

  @Test
  void aResultThatCannotBeStoredIsNotReturnedAndTheCallAfterTheLeaseIsARecovery() throws Exception {
    InMemoryLeaseStore memory = new InMemoryLeaseStore();
    LeaseStore flaky = new LeaseStore() {
      @Override
      public ClaimResult claim(IdempotentRequest r, String owner, Duration lease, Duration retention) {
        return memory.claim(r, owner, lease, retention);
      }

      @Override
      public boolean complete(Scope scope, IdempotencyKey key, String owner, StoredResponse response, Duration retention) {
        if (completesFail) {
          throw new IdemStoreException("connection reset", null);
        }
        return memory.complete(scope, key, owner, response, retention);
      }

      @Override
      public boolean release(Scope scope, IdempotencyKey key, String owner) {
        return memory.release(scope, key, owner);
      }

      @Override
      public long purgeExpired(int batchSize) {
        return memory.purgeExpired(batchSize);
      }
    };
    Duration lease = Duration.ofMillis(300);
    LeaseIdempotency engine = LeaseIdempotency.builder(flaky).lease(lease).build();
    Charges target = new Charges();
    ProxyFactory factory = new ProxyFactory(target);
    factory.addAdvice(new IdempotentMethodInterceptor(engine, null, null, new Jackson2JsonCodec(new ObjectMapper()), call -> "alice"));
    Charges charges = (Charges) factory.getProxy();

    completesFail = true;
    assertThatThrownBy(() -> charges.charge("c-1", 500)).isInstanceOf(OutcomeUnknownException.class);
    completesFail = false;
    Thread.sleep(lease.toMillis() + 150);
    Map<String, Object> again = charges.charge("c-1", 500);
    assertThat(target.recoveries).containsExactly(false, true);
    assertThat(again).containsEntry("charge", 1);
    assertThat(target.byKey).hasSize(1);
    assertThat(charges.charge("c-1", 500)).as("now stored and replayed").isEqualTo(again);
    assertThat(target.recoveries).hasSize(2);
    assertThat(IdempotentCalls.currentLeaseContext()).as("only inside the method").isEmpty();
  }
}
