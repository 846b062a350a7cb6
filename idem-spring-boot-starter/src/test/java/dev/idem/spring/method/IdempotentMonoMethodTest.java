package dev.idem.spring.method;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemAutoConfigurationTest;
import dev.idem.spring.IdemUnsupportedException;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentCalls;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.core.context.ReactiveSecurityContextHolder;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code @Idempotent} methods returning {@code Mono} in a reactive web application (WebFlux with
 * idem-webflux, so an {@code AsyncLeaseIdempotency} bean): claimed without blocking, the method's
 * {@code Mono} subscribed to once, its value stored through the JSON codec and replayed; a {@code
 * Flux} is refused at start-up.
 */
class IdempotentMonoMethodTest {

  private final ReactiveWebApplicationContextRunner app = new ReactiveWebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BootLine.withIdem(AopAutoConfiguration.class)))
      .withPropertyValues("idem.principal=shared", "idem.mode=lease");

  /** What the charge method returns: read back from the stored JSON by the codec. */
  public record Receipt(String id, long cents, boolean leased) {}

  /** Charges through a Mono whose value waits for {@link #gate}, counting calls and completions. */
  public static class MonoCharges {
    final AtomicInteger calls = new AtomicInteger();
    final AtomicInteger completions = new AtomicInteger();
    final AtomicInteger failuresLeft = new AtomicInteger();
    volatile CompletableFuture<Void> gate = CompletableFuture.completedFuture(null);
    volatile Throwable failure = new IllegalStateException("unset");

    @Idempotent(operation = "charge")
    public Mono<Receipt> charge(@Idempotent.Key String key, long cents) {
      int call = calls.incrementAndGet();
      boolean leased = IdempotentCalls.currentLeaseContext().isPresent();
      return Mono.fromCompletionStage(gate).then(Mono.defer(() -> {
        if (failuresLeft.getAndDecrement() > 0) {
          return Mono.error(failure);
        }
        completions.incrementAndGet();
        return Mono.just(new Receipt("charge-" + call, cents, leased));
      }));
    }

    // accessors, not fields: the bean is a class proxy, whose own fields are unset
    public int calls() {
      return calls.get();
    }

    public int completions() {
      return completions.get();
    }

    public void failNext(Throwable next) {
      failure = next;
      failuresLeft.set(1);
    }

    /** @return a gate, now closed, that the next values wait for */
    public CompletableFuture<Void> closeGate() {
      gate = new CompletableFuture<>();
      return gate;
    }

    @Idempotent(operation = "note")
    public Mono<Void> note(@Idempotent.Key String key) {
      return Mono.fromRunnable(completions::incrementAndGet);
    }
  }

  /** A store whose claims answer when the test opens their gate. */
  static final class GatedStore implements AsyncLeaseStore {
    final InMemoryLeaseStore delegate = new InMemoryLeaseStore();
    volatile CompletableFuture<Void> claimGate = CompletableFuture.completedFuture(null);

    @Override
    public CompletionStage<ClaimResult> claimAsync(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
      return claimGate.thenCompose(v -> delegate.claimAsync(request, ownerToken, lease, retention));
    }

    @Override
    public CompletionStage<Boolean> completeAsync(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response,
        Duration retention) {
      return delegate.completeAsync(scope, key, ownerToken, response, retention);
    }

    @Override
    public CompletionStage<Boolean> releaseAsync(Scope scope, IdempotencyKey key, String ownerToken) {
      return delegate.releaseAsync(scope, key, ownerToken);
    }

    @Override
    public CompletionStage<Long> purgeExpiredAsync(int batchSize) {
      return delegate.purgeExpiredAsync(batchSize);
    }
  }

  @Test
  void aMonoMethodRunsOnceAndTheRepeatedKeyGetsTheStoredValue() {
    app.withBean(MonoCharges.class).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      MonoCharges charges = ctx.getBean(MonoCharges.class);
      Mono<Receipt> first = charges.charge("k-1", 500);
      assertThat(charges.calls()).as("nothing runs before the subscription").isEqualTo(0);

      assertThat(first.block(Duration.ofSeconds(10))).isEqualTo(new Receipt("charge-1", 500, true));
      assertThat(charges.charge("k-1", 500).block(Duration.ofSeconds(10))).isEqualTo(new Receipt("charge-1", 500, true));
      assertThat(charges.calls()).as("the method was called once").isEqualTo(1);
      assertThat(charges.completions()).isEqualTo(1);

      assertThat(charges.charge("k-2", 700).block(Duration.ofSeconds(10))).isEqualTo(new Receipt("charge-2", 700, true));
    });
  }

  @Test
  void anEmptyMonoIsStoredAndReplayedEmpty() {
    app.withBean(MonoCharges.class).run(ctx -> {
      MonoCharges charges = ctx.getBean(MonoCharges.class);
      assertThat(charges.note("n-1").blockOptional(Duration.ofSeconds(10))).isEmpty();
      assertThat(charges.note("n-1").blockOptional(Duration.ofSeconds(10))).isEmpty();
      assertThat(charges.completions()).isEqualTo(1);
    });
  }

  @Test
  void otherArgumentsWithTheSameKeyAreRefusedAsOnTheBlockingPath() {
    app.withBean(MonoCharges.class).run(ctx -> {
      MonoCharges charges = ctx.getBean(MonoCharges.class);
      charges.charge("k-1", 500).block(Duration.ofSeconds(10));
      assertThatThrownBy(() -> charges.charge("k-1", 600).block(Duration.ofSeconds(10)))
          .isInstanceOf(IdempotencyKeyReusedException.class);
      assertThat(charges.calls()).isEqualTo(1);
    });
  }

  @Test
  void concurrentCallsWithOneKeyRunTheMethodOnceAndAllGetItsValue() {
    app.withBean(MonoCharges.class).withPropertyValues("idem.in-progress=wait", "idem.max-wait=20s").run(ctx -> {
      MonoCharges charges = ctx.getBean(MonoCharges.class);
      CompletableFuture<Void> gate = charges.closeGate();
      List<CompletableFuture<Receipt>> calls = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        calls.add(charges.charge("k-1", 500).toFuture());
      }
      gate.complete(null);
      for (CompletableFuture<Receipt> call : calls) {
        assertThat(call.get(20, TimeUnit.SECONDS)).isEqualTo(new Receipt("charge-1", 500, true));
      }
      assertThat(charges.calls()).isEqualTo(1);
      assertThat(charges.completions()).isEqualTo(1);
    });
  }

  @Test
  void anErrorReachesTheCallerAsItIsAndReleasesTheKey() {
    app.withBean(MonoCharges.class).run(ctx -> {
      MonoCharges charges = ctx.getBean(MonoCharges.class);
      charges.failNext(new IllegalStateException("the payment service said no"));
      assertThatThrownBy(() -> charges.charge("k-1", 500).block(Duration.ofSeconds(10)))
          .isInstanceOf(IllegalStateException.class).hasMessage("the payment service said no");
      assertThat(charges.charge("k-1", 500).block(Duration.ofSeconds(10))).isEqualTo(new Receipt("charge-2", 500, true));

      charges.failNext(new IOException("connection reset"));
      CompletableFuture<Receipt> checked = charges.charge("k-2", 500).toFuture();
      assertThatThrownBy(() -> checked.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
          .cause().isInstanceOf(IOException.class).hasMessage("connection reset");
      assertThat(charges.charge("k-2", 500).block(Duration.ofSeconds(10)).id()).isEqualTo("charge-4");
      assertThat(charges.completions()).isEqualTo(2);
    });
  }

  /**
   * The equivalent of BlockHound here: with the store's claim and then the method's value held
   * back, subscribing returns at once, from a caller that would hang if anything on the way waited.
   */
  @Test
  void noCallBlocksWhileTheClaimOrTheValueIsPending() {
    GatedStore store = new GatedStore();
    app.withBean(MonoCharges.class).withBean(AsyncLeaseIdempotency.class, () -> AsyncLeaseIdempotency.builder(store).build()).run(ctx -> {
      MonoCharges charges = ctx.getBean(MonoCharges.class);
      store.claimGate = new CompletableFuture<>();
      CompletableFuture<Void> gate = charges.closeGate();
      CompletableFuture<Receipt> call = assertTimeoutPreemptively(Duration.ofSeconds(5), () -> charges.charge("k-1", 500).toFuture());
      assertThat(call).isNotDone();
      assertThat(charges.calls()).as("not called before the claim").isEqualTo(0);

      store.claimGate.complete(null);
      assertThat(charges.calls()).isEqualTo(1);
      assertThat(call).as("the value is pending, and nothing waited for it").isNotDone();

      gate.complete(null);
      assertThat(call.get(10, TimeUnit.SECONDS)).isEqualTo(new Receipt("charge-1", 500, true));
    });
  }

  @Test
  void aSubscriberThatCancelsBeforeTheMethodIsCalledLeavesTheKeyFree() {
    GatedStore store = new GatedStore();
    app.withBean(MonoCharges.class).withBean(AsyncLeaseIdempotency.class, () -> AsyncLeaseIdempotency.builder(store).build()).run(ctx -> {
      MonoCharges charges = ctx.getBean(MonoCharges.class);
      store.claimGate = new CompletableFuture<>();
      Disposable subscription = charges.charge("k-1", 500).subscribe();
      subscription.dispose();
      store.claimGate.complete(null); // the claim is won after the subscriber left
      assertThat(charges.calls()).as("the method is not called for nobody").isEqualTo(0);

      assertThat(charges.charge("k-1", 500).block(Duration.ofSeconds(10))).isEqualTo(new Receipt("charge-1", 500, true));
      assertThat(charges.calls()).isEqualTo(1);
    });
  }

  @Test
  void aSubscriberThatCancelsOnceTheMethodRunsLeavesItToFinishAndItsValueIsReplayed() {
    app.withBean(MonoCharges.class).run(ctx -> {
      MonoCharges charges = ctx.getBean(MonoCharges.class);
      CompletableFuture<Void> gate = charges.closeGate();
      Disposable subscription = charges.charge("k-1", 500).subscribe();
      assertThat(charges.calls()).isEqualTo(1);
      subscription.dispose();
      gate.complete(null); // the method's Mono ends after its subscriber left

      assertThat(charges.completions()).isEqualTo(1);
      assertThat(charges.charge("k-1", 500).block(Duration.ofSeconds(10))).isEqualTo(new Receipt("charge-1", 500, true));
      assertThat(charges.calls()).as("not called a second time").isEqualTo(1);
    });
  }

  @Test
  void withSpringSecurityEachSubscribersUserHasItsOwnScope() {
    app.withBean(MonoCharges.class).withPropertyValues("idem.principal=spring-security").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      MonoCharges charges = ctx.getBean(MonoCharges.class);
      Receipt alice = charges.charge("k-1", 500).contextWrite(ReactiveSecurityContextHolder.withAuthentication(user("alice")))
          .block(Duration.ofSeconds(10));
      Receipt bob = charges.charge("k-1", 500).contextWrite(ReactiveSecurityContextHolder.withAuthentication(user("bob")))
          .block(Duration.ofSeconds(10));
      Receipt aliceAgain = charges.charge("k-1", 500).contextWrite(ReactiveSecurityContextHolder.withAuthentication(user("alice")))
          .block(Duration.ofSeconds(10));
      assertThat(alice.id()).isEqualTo("charge-1");
      assertThat(bob.id()).as("another caller's key is not alice's").isEqualTo("charge-2");
      assertThat(aliceAgain).isEqualTo(alice);
    });
  }

  private static UsernamePasswordAuthenticationToken user(String name) {
    return UsernamePasswordAuthenticationToken.authenticated(name, "n/a", AuthorityUtils.createAuthorityList("ROLE_USER"));
  }

  /** The method docs/reactive.md shows. */
  public static class Payments {
    private final AtomicInteger charged = new AtomicInteger();

    // tag::mono[]
    @Idempotent(operation = "charge")
    public Mono<Receipt> charge(@Idempotent.Key String key, long cents) {
      // runs once per key, when the Mono is first subscribed to; a retry gets this Receipt back
      return Mono.fromSupplier(() -> new Receipt("charge-" + charged.incrementAndGet(), cents, false));
    }
    // end::mono[]
  }

  @Test
  void theDocumentedMethodRunsOncePerKey() {
    app.withBean(Payments.class).run(ctx -> {
      Payments payments = ctx.getBean(Payments.class);
      Receipt first = payments.charge("k-1", 500).block(Duration.ofSeconds(10));
      assertThat(payments.charge("k-1", 500).block(Duration.ofSeconds(10))).isEqualTo(first);
      assertThat(first.id()).isEqualTo("charge-1");
    });
  }

  /** A stream of charges: refused, whatever the engine. */
  public static class FluxCharges {
    @Idempotent
    public Flux<String> charges(@Idempotent.Key String key) {
      return Flux.just("a", "b");
    }
  }

  @Test
  void aFluxMethodIsRefusedAtStartUpSayingWhyAndWhatToDo() {
    app.withBean("fluxCharges", FluxCharges.class).run(ctx -> {
      assertThat(ctx).hasFailed();
      IdemUnsupportedException e = (IdemUnsupportedException) IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(),
          IdemUnsupportedException.class);
      assertThat(e.getMessage()).contains("bean 'fluxCharges'", "reactor.core.publisher.Flux<java.lang.String>",
          "never end", "Mono<List<T>>", "collectList()");
    });
  }
}
