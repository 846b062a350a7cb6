package dev.idem.redis;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import java.util.function.Supplier;

/** Helpers for the stores' stages. Stateless. */
final class Stages {

  private Stages() {}

  /**
   * @return what {@code call} returned, or a failed stage with what it threw, so that a failure
   *     never escapes as a throw from an async method
   */
  static <T> CompletionStage<T> call(Supplier<CompletionStage<T>> call) {
    try {
      return call.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * @return a stage that completes as {@code stage} does, but with {@code map}'s exception in place
   *     of a failure (unwrapped before {@code map} sees it), not wrapped in a {@link CompletionException}
   */
  static <T> CompletionStage<T> mapFailure(CompletionStage<T> stage, Function<Throwable, ? extends RuntimeException> map) {
    CompletableFuture<T> result = new CompletableFuture<>();
    stage.whenComplete((value, failure) -> {
      if (failure == null) {
        result.complete(value);
      } else {
        RuntimeException mapped;
        try {
          mapped = map.apply(unwrap(failure));
        } catch (RuntimeException e) {
          mapped = e;
        }
        result.completeExceptionally(mapped);
      }
    });
    return result;
  }

  /** Completes {@code target} as {@code source} completes, with its value or its failure (unwrapped). */
  static <T> void relay(CompletionStage<? extends T> source, CompletableFuture<T> target) {
    source.whenComplete((value, failure) -> {
      if (failure == null) {
        target.complete(value);
      } else {
        target.completeExceptionally(unwrap(failure));
      }
    });
  }

  /** @return the failure itself, not the {@link CompletionException} or {@link ExecutionException} around it */
  static Throwable unwrap(Throwable t) {
    Throwable cause = t;
    while ((cause instanceof CompletionException || cause instanceof ExecutionException) && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }

  /**
   * The value of a stage of {@link BlockingStoreClient}, complete already: the blocking store's
   * way back from the shared rules. A failure is thrown as it is (unwrapped).
   */
  static <T> T join(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().join();
    } catch (CompletionException e) {
      Throwable cause = unwrap(e);
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw e;
    }
  }
}
