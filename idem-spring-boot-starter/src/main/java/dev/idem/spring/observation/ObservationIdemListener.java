package dev.idem.spring.observation;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.spring.Idempotent;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One Micrometer {@link Observation} per attempt, on every engine (the HTTP filter's, {@link
 * Idempotent} methods', the consumers', gRPC's), in both modes; with Spring Boot's observation
 * handlers it gives a timer and, with a tracer, a span. Every other event goes to the listener it
 * wraps (the {@code idem.*} counters of {@link MicrometerIdemListener}).
 *
 * <ul>
 *   <li>name {@value #NAME}; contextual name (the span's) {@code idem <operation>} in lower case,
 *       such as {@code idem post /notes} (Micrometer Tracing turns every upper-case letter of a
 *       span's name into a hyphen and the letter: {@code idem -p-o-s-t /notes});
 *   <li>low-cardinality key values only: {@value #MODE} ({@code lease}, {@code transactional}, or
 *       {@code none} for an HTTP refusal before any engine), {@value #OPERATION} (the scope's
 *       operation: a route's or handler's pattern, an {@code @Idempotent} method's operation, a
 *       consumer's; never a key, nothing from a body), {@value #OUTCOME} (below);
 *   <li>outcomes: {@code executed}, {@code released}, {@code replayed}, {@code key-reused}, {@code
 *       in-progress}, {@code outcome-unknown}, {@code store-unavailable}, {@code rolled-back},
 *       {@code request-failed}, {@code stored-response-unreadable}, {@code effect-failed} (the
 *       effect threw; the observation carries the exception as its error), and the HTTP filter's
 *       refusals before any engine, {@code key-missing}, {@code key-malformed}, {@code
 *       payload-invalid}, {@code body-too-large} (an observation that starts and stops at once).
 * </ul>
 *
 * <p>The observation is current (in scope) while the attempt runs, on the attempt's thread: the
 * effect's own observations (a JDBC call, an HTTP client call, a span of the application's) are
 * its children. With a {@link TraceContextPropagation} (the starter's, over Micrometer Tracing)
 * the attempt's trace context is kept with the key's record, and a replay's attempt gets a child
 * span that links to the first attempt's span: a key can be followed from its replay to the trace
 * that did the work. Thread-safe; one instance serves every engine.
 */
public final class ObservationIdemListener implements IdemListener {

  /** The observation's name: {@value}. */
  public static final String NAME = "idem.attempt";

  /** The key of the mode: {@value}. */
  public static final String MODE = "idem.mode";

  /** The key of the operation: {@value}. */
  public static final String OPERATION = "idem.operation";

  /** The key of the outcome: {@value}. */
  public static final String OUTCOME = "idem.outcome";

  private final ObservationRegistry registry;
  private final IdemListener delegate;
  private final TraceContextPropagation tracing;

  /**
   * @param registry where observations are made, never {@code null}
   * @param delegate told of every event as well (the counters), never {@code null}; {@link
   *     IdemListener#NONE} for none
   */
  public ObservationIdemListener(ObservationRegistry registry, IdemListener delegate) {
    this(registry, delegate, TraceContextPropagation.NONE);
  }

  /**
   * Observations that also follow a key across attempts: each attempt's trace context is kept with
   * the key's record ({@link Attempt#traceContext()}), and a replay's span links to the first
   * attempt's ({@link TraceContextPropagation#linkToFirstAttempt}).
   *
   * @param registry where observations are made, never {@code null}
   * @param delegate told of every event as well (the counters), never {@code null}; {@link
   *     IdemListener#NONE} for none
   * @param tracing reads the current trace context and links replays, never {@code null}; {@link
   *     TraceContextPropagation#NONE} keeps and links nothing
   */
  public ObservationIdemListener(ObservationRegistry registry, IdemListener delegate, TraceContextPropagation tracing) {
    this.registry = Objects.requireNonNull(registry, "registry");
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.tracing = Objects.requireNonNull(tracing, "tracing");
  }

  @Override
  public Attempt started(IdempotentRequest request, String mode) {
    return attempt(request, mode, false);
  }

  /**
   * {@inheritDoc}
   *
   * <p>The observation is started but not made current on the calling thread beyond this call
   * (an event loop's thread goes on to other requests): its scope is opened only while this call
   * reads the attempt's trace context and while a replay's link is made, each time opened and
   * closed on one thread. The effect's own observations are therefore not its children unless the
   * application propagates the context itself (Reactor's context). Its parent is the observation
   * current on the calling thread when it starts: idem-webflux's filter makes the request's current
   * there (from the Reactor context, with Micrometer's context-propagation on the class path).
   */
  @Override
  public Attempt startedAsync(IdempotentRequest request, String mode) {
    return attempt(request, mode, true);
  }

  private Attempt attempt(IdempotentRequest request, String mode, boolean detached) {
    String operation = request.scope().operation();
    Observation observation = Observation.createNotStarted(NAME, registry)
        .contextualName(spanName("idem ", operation))
        .lowCardinalityKeyValue(MODE, mode)
        .lowCardinalityKeyValue(OPERATION, operation)
        .start();
    Observation.Scope scope = observation.openScope();
    Map<String, String> eager;
    Attempt inner;
    try {
      // detached: read now, while the attempt's span is current on this thread (its scope closes
      // below). Blocking engines ask for it only when an answer is stored, on this thread with the
      // scope still open, so replays and refusals never pay for a propagator's inject.
      eager = detached ? TraceContextPropagation.currentContextOrEmpty(tracing) : Map.of();
      // the wrapped listener's failure leaves its attempt unobserved, never this observation's scope open
      inner = detached ? IdemListener.startAsync(delegate, request, mode) : IdemListener.start(delegate, request, mode);
    } finally {
      if (detached) {
        scope.close(); // nothing stays bound to an event loop's thread
      }
    }
    return new Attempt() {
      private @Nullable Map<String, String> lazy;

      @Override
      public Map<String, String> traceContext() {
        if (detached) {
          return eager;
        }
        Map<String, String> read = lazy;
        if (read == null) {
          read = TraceContextPropagation.currentContextOrEmpty(tracing);
          lazy = read;
        }
        return read;
      }

      @Override
      public void ended(AttemptResult result) {
        try {
          inner.ended(result);
          if (detached) {
            try (Observation.Scope linking = observation.openScope()) {
              linkReplay(operation, result);
            }
          } else {
            linkReplay(operation, result);
          }
        } finally {
          stop(detached ? null : scope, observation.lowCardinalityKeyValue(OUTCOME, outcome(result.kind())));
        }
      }

      @Override
      public void failed(Throwable error) {
        try {
          inner.failed(error);
        } finally {
          stop(detached ? null : scope, observation.lowCardinalityKeyValue(OUTCOME, "effect-failed").error(error));
        }
      }
    };
  }

  /**
   * @return {@code prefix + operation} in lower case: the name Micrometer Tracing gives a span
   *     unchanged (its handlers hyphenate every upper-case letter, {@code SpanNameUtil.toLowerHyphen})
   */
  public static String spanName(String prefix, String operation) {
    return (prefix + operation).toLowerCase(Locale.ROOT);
  }


  /** A replay's span links to the first attempt's, when its record kept one. */
  private void linkReplay(String operation, AttemptResult result) {
    if (result.kind() != AttemptResult.Kind.REPLAYED || tracing == TraceContextPropagation.NONE) {
      return;
    }
    result.outcome().map(o -> o.response().traceContext()).filter(c -> !c.isEmpty())
        .ifPresent(first -> tracing.linkToFirstAttempt(operation, first));
  }

  private static void stop(Observation.@Nullable Scope scope, Observation observation) {
    try {
      if (scope != null) {
        scope.close();
      }
    } finally {
      observation.stop();
    }
  }

  /** @return the outcome's name: the kind in lower case, words joined by {@code -} */
  static String outcome(AttemptResult.Kind kind) {
    return kind.name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  @Override
  public void attempted(IdempotentRequest request, AttemptResult result) {
    delegate.attempted(request, result);
  }

  @Override
  public void executed(IdempotentRequest request, Outcome outcome) {
    delegate.executed(request, outcome);
  }

  @Override
  public void replayed(IdempotentRequest request) {
    delegate.replayed(request);
  }

  @Override
  public void rejected(IdempotentRequest request, String reason) {
    delegate.rejected(request, reason);
  }

  @Override
  public void waiting(IdempotentRequest request) {
    delegate.waiting(request);
  }

  @Override
  public void takenOver(IdempotentRequest request) {
    delegate.takenOver(request);
  }

  @Override
  public void refused(String operation, String reason) {
    try {
      Observation.createNotStarted(NAME, registry)
          .contextualName(spanName("idem ", operation))
          .lowCardinalityKeyValue(MODE, "none")
          .lowCardinalityKeyValue(OPERATION, operation)
          .lowCardinalityKeyValue(OUTCOME, reason)
          .start()
          .stop();
    } finally {
      delegate.refused(operation, reason);
    }
  }
}
