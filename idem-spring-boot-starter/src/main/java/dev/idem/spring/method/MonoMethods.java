package dev.idem.spring.method;

import dev.idem.core.AsyncEffect;
import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.EffectFailedException;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseContext;
import dev.idem.core.Outcome;
import dev.idem.core.ResponseNotStoredException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.spring.internal.JsonCodec;
import dev.idem.spring.internal.MethodCalls;
import dev.idem.spring.internal.ReactiveSecurityPrincipals;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.core.ResolvableType;
import reactor.core.publisher.Mono;

/**
 * {@link dev.idem.spring.Idempotent} methods that return a {@link Mono}, on the application's
 * {@link AsyncLeaseIdempotency} (lease mode without blocking; a reactive web application with
 * idem-webflux has one). The interceptor hands such a call here; the call returns a {@code Mono}
 * at once, and nothing happens until it is subscribed to. Each subscription is one attempt: the key
 * is claimed without blocking; for a first attempt the method is called and its {@code Mono}
 * subscribed to once, by the engine; its value, written by the same JSON codec as a synchronous
 * method's result (an empty {@code Mono} as JSON {@code null}), completes the key, and the caller
 * gets the value read back from that JSON, as a repeated call does. An error signal (or a method
 * that throws) releases the key, so a later call runs again, and reaches the caller as it is. A
 * repeated key is replayed from the store without calling the method; other arguments under the
 * key, a call still running, and a result too long to store fail the returned {@code Mono} with
 * the synchronous path's exceptions.
 *
 * <p>A subscriber that cancels before the method was called stops the attempt (the key, if won, is
 * released); once called, the method's {@code Mono} runs on to its end, detached, and its value is
 * stored, so that the effect a cancelled caller started is not run a second time by its retry.
 *
 * <p>The principal is the application's {@link PrincipalResolver}'s (asked on the calling
 * thread), or with Spring Security the authentication of the subscriber's Reactor context ({@code
 * ReactiveSecurityContextHolder}, where Spring Security for WebFlux puts it), else of the calling
 * thread. Immutable and thread-safe.
 */
final class MonoMethods {

  private final AsyncLeaseIdempotency engine;
  private final JsonCodec json;
  private final PrincipalResolver<Object> principals;
  private final boolean reactiveSecurity;
  private final String anonymousPrincipal;
  private final Function<Object, StoredResponse> store;

  /**
   * @param engine the non-blocking lease-mode engine, never {@code null}
   * @param json the codec of stored values, never {@code null}
   * @param principals the principal of the calling thread (or the application's resolver), never {@code null}
   * @param reactiveSecurity whether the subscriber's Spring Security context, when it has one, names the principal
   * @param anonymousPrincipal the principal of anonymous callers, never {@code null}
   * @param store makes the stored response of a value (which may be {@code null}), as for synchronous methods
   */
  MonoMethods(AsyncLeaseIdempotency engine, JsonCodec json, PrincipalResolver<Object> principals, boolean reactiveSecurity,
      String anonymousPrincipal, Function<Object, StoredResponse> store) {
    this.engine = Objects.requireNonNull(engine, "engine");
    this.json = Objects.requireNonNull(json, "json");
    this.principals = Objects.requireNonNull(principals, "principals");
    this.reactiveSecurity = reactiveSecurity;
    this.anonymousPrincipal = Objects.requireNonNull(anonymousPrincipal, "anonymousPrincipal");
    this.store = Objects.requireNonNull(store, "store");
  }

  /** @return {@code failure} as the returned {@code Mono}'s error, as a caller of a {@code Mono} method expects it */
  static Mono<Object> failed(Throwable failure) {
    return Mono.error(failure);
  }

  /**
   * @param invocation the intercepted call, not yet proceeded
   * @param method the most specific method, returning {@code Mono}
   * @param operation the scope's operation
   * @param key the call's key
   * @param fingerprint the call's arguments other than the key
   * @return the {@code Mono} the caller gets: lazy, one attempt per subscription
   */
  Mono<Object> call(MethodInvocation invocation, Method method, String operation, IdempotencyKey key, Fingerprint fingerprint) {
    @Nullable String onThisThread = principals.resolve(method);
    Type valueType = ResolvableType.forMethodReturnType(method).getGeneric(0).getType();
    Mono<Optional<String>> principal = reactiveSecurity
        ? ReactiveSecurityPrincipals.current().defaultIfEmpty(Optional.ofNullable(onThisThread))
        : Mono.fromSupplier(() -> Optional.ofNullable(onThisThread));
    return principal.flatMap(name -> Mono.deferContextual(context -> {
      IdempotentRequest request =
          new IdempotentRequest(Scope.of(Scope.principalPart(name.orElse(null), anonymousPrincipal), operation), key, fingerprint);
      Call run = new Call();
      AsyncEffect effect = claim -> {
        if (!run.start()) {
          return CompletableFuture.failedFuture(new CancellationException("the subscriber cancelled before the method was called"));
        }
        Mono<?> value = proceed(invocation, claim.lease());
        return value
            .contextWrite(context)
            .map(v -> {
              run.value.set(v);
              return store.apply(v);
            })
            .switchIfEmpty(Mono.fromSupplier(() -> store.apply(null)))
            .onErrorMap(e -> !(e instanceof MethodFailure), MethodFailure::new)
            .toFuture();
      };
      return Mono.fromCompletionStage(() -> engine.attempt(request, effect)
              .handle((result, error) -> {
                if (error == null) {
                  return result;
                }
                if (run.abandoned()) {
                  return null; // nobody is waiting for it
                }
                throw new CompletionException(methodsOwn(error));
              }))
          .doOnCancel(run::abandon)
          .flatMap(result -> {
            Outcome outcome = result.outcomeOrThrow();
            StoredResponse response = outcome.response();
            if (!response.bodyStored()) {
              Object ran = run.value.get();
              if (!outcome.replayed() && ran != null) {
                return Mono.just(ran); // this call ran the method; only its repetitions lack the result
              }
              return Mono.error(new ResponseNotStoredException(request.key(), response));
            }
            return Mono.justOrEmpty(json.read(response.body(), valueType));
          });
    }));
  }

  /** Calls the method, with its claim readable on this thread ({@code IdempotentCalls.currentLeaseContext()}) while it does. */
  private static Mono<?> proceed(MethodInvocation invocation, LeaseContext lease) {
    MethodInvocation once = invocation instanceof ProxyMethodInvocation proxied ? proxied.invocableClone() : invocation;
    LeaseContext outer = MethodCalls.LEASE_CONTEXT.get();
    MethodCalls.LEASE_CONTEXT.set(lease);
    try {
      Object value = once.proceed();
      if (value == null) {
        throw new MethodFailure(new IllegalStateException(invocation.getMethod() + " returned null instead of a Mono"));
      }
      return (Mono<?>) value;
    } catch (MethodFailure e) {
      throw e;
    } catch (Throwable t) {
      throw new MethodFailure(t);
    } finally {
      if (outer == null) {
        MethodCalls.LEASE_CONTEXT.remove();
      } else {
        MethodCalls.LEASE_CONTEXT.set(outer);
      }
    }
  }

  /** The method's own failure, unwrapped from the engine's and this class's wrappers; else {@code error} itself. */
  private static Throwable methodsOwn(Throwable error) {
    Throwable cause = error;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cause instanceof EffectFailedException && cause.getCause() instanceof MethodFailure) {
      cause = cause.getCause();
    }
    return cause instanceof MethodFailure && cause.getCause() != null ? cause.getCause() : cause;
  }

  /** Wraps what the method threw or signalled, so that it crosses the engine and reaches the caller as it was. */
  private static final class MethodFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MethodFailure(Throwable cause) {
      super(cause);
    }
  }

  /** One subscription's attempt: whether the method was called before the subscriber cancelled, and its value. */
  private static final class Call {
    private static final int WAITING = 0;
    private static final int STARTED = 1;
    private static final int ABANDONED = 2;

    private final AtomicInteger state = new AtomicInteger(WAITING);
    final AtomicReference<@Nullable Object> value = new AtomicReference<>();

    boolean start() {
      return state.compareAndSet(WAITING, STARTED);
    }

    void abandon() {
      state.compareAndSet(WAITING, ABANDONED);
    }

    boolean abandoned() {
      return state.get() == ABANDONED;
    }
  }
}
