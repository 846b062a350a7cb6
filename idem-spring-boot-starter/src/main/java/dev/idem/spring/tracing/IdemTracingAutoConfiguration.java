package dev.idem.spring.tracing;

import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The trace context across the outbox, only when Micrometer Tracing is on the class path: the
 * {@link TraceContextPropagation} that the starter's outbox stores with each intent and its
 * idempotent consumers continue ({@link MicrometerTracePropagation}), made from the application's
 * {@link Tracer}, {@link Propagator} and {@link ObservationRegistry} (Spring Boot makes all three
 * with a tracing bridge). Without one of them, or with {@code idem.observations.enabled=false}, it
 * is {@link TraceContextPropagation#NONE}. A {@code TraceContextPropagation} bean of the
 * application's own replaces it.
 */
@AutoConfiguration(after = IdemAutoConfiguration.class)
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = {"io.micrometer.tracing.Tracer", "io.micrometer.observation.ObservationRegistry"})
public class IdemTracingAutoConfiguration {

  /**
   * Looked up when the bean is made (when the outbox or the first consumer needs it), so that the
   * order in which Spring Boot's tracing configurations run does not matter.
   */
  @Bean
  @ConditionalOnMissingBean(TraceContextPropagation.class)
  TraceContextPropagation idemTraceContextPropagation(ObjectProvider<Tracer> tracers, ObjectProvider<Propagator> propagators,
      ObjectProvider<ObservationRegistry> observations, IdemProperties p) {
    Tracer tracer = tracers.getIfUnique();
    Propagator propagator = propagators.getIfUnique();
    ObservationRegistry registry = observations.getIfUnique();
    if (!p.getObservations().isEnabled() || tracer == null || propagator == null || registry == null || registry.isNoop()
        || tracer == Tracer.NOOP) {
      return TraceContextPropagation.NONE;
    }
    return new MicrometerTracePropagation(tracer, propagator, registry);
  }
}
