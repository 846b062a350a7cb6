package dev.idem.spring;

import dev.idem.core.IdemListener;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Micrometer meters, only when Micrometer is on the class path and the application has a
 * registry: the counters of both engines ({@link MicrometerIdemListener}, unless the application
 * has an {@link IdemListener} of its own) and the store's latency ({@link TimedLeaseStore}, an
 * {@link IdemStoreDecorator}). No other configuration touches Micrometer's types.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
class IdemMetricsConfiguration {

  @Bean
  @ConditionalOnBean(MeterRegistry.class)
  @ConditionalOnMissingBean(IdemListener.class)
  IdemListener micrometerIdemListener(MeterRegistry registry) {
    return new MicrometerIdemListener(registry);
  }

  @Bean
  @ConditionalOnBean(MeterRegistry.class)
  IdemStoreDecorator timedIdemStore(MeterRegistry registry) {
    return store -> new TimedLeaseStore(store, registry);
  }
}
