package dev.idem.webflux;

import io.micrometer.context.ContextSnapshot;
import io.micrometer.context.ContextSnapshotFactory;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

/**
 * Makes the values of the subscriber's Reactor context current on the calling thread while an
 * engine's attempt starts, and only then: Spring WebFlux (6.1 and later) keeps the request's
 * observation in the Reactor context (Micrometer's {@code ObservationThreadLocalAccessor.KEY}), not
 * in a thread local, so without this an attempt's observation ({@link
 * dev.idem.core.IdemListener#startedAsync}) would find no current observation and begin a trace of
 * its own instead of being the request's child.
 *
 * <p>Done with Micrometer's context-propagation library ({@code io.micrometer:context-propagation},
 * 1.1 or later; Micrometer Tracing brings it), an optional dependency: without it on the class
 * path nothing is restored, as before. Only the observation is restored (the key {@value
 * #OBSERVATION_KEY}), not every value the library's registered accessors know: an accessor of
 * the application's that fails to set its value would otherwise fail the request or leave the
 * values set before it on the thread, and Idem needs only the parent. It is put back as it was
 * when the call returns, so nothing stays bound to an event loop's thread.
 *
 * <p>The library's registry (which finds the accessors through {@link java.util.ServiceLoader},
 * reading jar files) is loaded when an instance is made, at the filter's construction, not on an
 * event loop. Immutable and thread-safe; never blocks after construction.
 */
final class SubscriberThreadLocals {

  /** Micrometer's {@code ObservationThreadLocalAccessor.KEY}: where WebFlux keeps the request's observation. */
  static final String OBSERVATION_KEY = "micrometer.observation";

  private static final boolean LIBRARY_PRESENT = present("io.micrometer.context.ContextSnapshotFactory");

  /** Restores nothing: the library is absent. */
  private static final SubscriberThreadLocals NONE = new SubscriberThreadLocals(null);

  private final @Nullable Restorer restorer;

  private SubscriberThreadLocals(@Nullable Restorer restorer) {
    this.restorer = restorer;
  }

  /**
   * @return one that restores the context's values when context-propagation is on the class path,
   *     else one that restores nothing; never {@code null}
   */
  static SubscriberThreadLocals create() {
    return LIBRARY_PRESENT ? new SubscriberThreadLocals(new Restorer()) : NONE;
  }

  /**
   * Calls {@code call} with the observation of {@code context} current on this thread, then puts
   * back what was current before.
   *
   * @param context the subscriber's Reactor context, never {@code null}
   * @param call what to call, never {@code null}
   * @return what {@code call} returned
   * @throws RuntimeException what {@code call}, or an accessor that failed to set its value, threw
   */
  <T> T around(ContextView context, Supplier<T> call) {
    Restorer r = restorer;
    return r == null ? call.get() : r.around(context, call);
  }

  /**
   * {@code source}, subscribed to with the values of the subscriber's Reactor context current on
   * the subscribing thread for the subscription call only (an engine that starts its attempt at
   * subscription then starts it inside the request's observation); its signals are not touched.
   *
   * @param source what to subscribe to, never {@code null}
   * @return {@code source} itself when nothing is restored; else a {@code Mono} of its signals
   */
  <T> Mono<T> subscribing(Mono<T> source) {
    if (restorer == null) {
      return source;
    }
    // fromDirect, not from: Mono.from cancels its source at the first value, and an engine's Mono
    // (a transaction's usingWhen) gives its result before its commit completes
    return Mono.deferContextual(context -> Mono.fromDirect(subscriber -> around(context, () -> {
      source.subscribe(subscriber);
      return Boolean.TRUE;
    })));
  }

  private static boolean present(String className) {
    try {
      Class.forName(className, false, SubscriberThreadLocals.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError absent) {
      return false;
    }
  }

  /**
   * The only class that uses context-propagation's types, so that nothing resolves them unless the
   * library is present (it is made only then).
   */
  private static final class Restorer {
    private final ContextSnapshotFactory factory = ContextSnapshotFactory.builder().build();

    <T> T around(ContextView context, Supplier<T> call) {
      try (ContextSnapshot.Scope ignored = factory.setThreadLocalsFrom(context, OBSERVATION_KEY)) {
        return call.get();
      }
    }
  }
}
