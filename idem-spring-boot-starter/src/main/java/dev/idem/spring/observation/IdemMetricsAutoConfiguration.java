package dev.idem.spring.observation;

import dev.idem.core.IdemListener;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdemStoreDecorator;
import dev.idem.spring.internal.TimedLeaseStore;
import dev.idem.spring.steps.IdemStepsAutoConfiguration;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Micrometer meters and observations, only when Micrometer is on the class path: with a meter
 * registry the counters of both engines ({@link MicrometerIdemListener}) and the store's latency
 * ({@link TimedLeaseStore}, an {@link IdemStoreDecorator}); with an observation registry an
 * observation per attempt ({@link ObservationIdemListener}), which gives a timer and, with a
 * tracer, a span. An {@link IdemListener} of the application's own replaces both the counters and
 * the observations (wrap it in an {@code ObservationIdemListener} to keep the observations; pass its
 * events on to a {@code MicrometerIdemListener} to keep the counters). No other
 * configuration touches Micrometer's types.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemStepsAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
public class IdemMetricsAutoConfiguration {

  /**
   * The counters, with a meter registry, inside an observation per attempt ({@link
   * ObservationIdemListener}), with an observation registry that is not a no-op and {@code
   * idem.observations.enabled} (default true), keeping each attempt's trace context with its key
   * and linking replays when there is a {@link TraceContextPropagation}; none of them: no listener.
   */
  @Bean
  @ConditionalOnMissingBean(IdemListener.class)
  IdemListener micrometerIdemListener(ObjectProvider<MeterRegistry> meters, ObjectProvider<ObservationRegistry> observations,
      ObjectProvider<TraceContextPropagation> tracing, IdemProperties p) {
    MeterRegistry registry = meters.getIfUnique();
    IdemListener counters = registry == null ? IdemListener.NONE : new MicrometerIdemListener(registry);
    ObservationRegistry observationRegistry = p.getObservations().isEnabled() ? observations.getIfUnique() : null;
    return observationRegistry == null || observationRegistry.isNoop() ? counters
        : new ObservationIdemListener(observationRegistry, counters, tracing.getIfUnique(() -> TraceContextPropagation.NONE));
  }

  @Bean
  @ConditionalOnBean(MeterRegistry.class)
  IdemStoreDecorator timedIdemStore(MeterRegistry registry) {
    return store -> new TimedLeaseStore(store, registry);
  }
}
