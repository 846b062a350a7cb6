package dev.idem.spring.store;

import static dev.idem.spring.internal.IdemSettings.configured;
import static dev.idem.spring.internal.IdemSettings.inProgressPolicy;

import dev.idem.core.IdemListener;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.LeaseStore;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.Idempotent;
import dev.idem.spring.grpc.IdemGrpcAutoConfiguration;
import dev.idem.spring.internal.ModeDecision;
import dev.idem.spring.kafka.IdemKafkaAutoConfiguration;
import dev.idem.spring.keystatus.IdemKeyStatusAutoConfiguration;
import dev.idem.spring.method.IdemMethodAutoConfiguration;
import dev.idem.spring.observation.IdemMetricsAutoConfiguration;
import dev.idem.spring.openapi.IdemOpenApiAutoConfiguration;
import dev.idem.spring.outbox.IdemOutboxAutoConfiguration;
import dev.idem.spring.principal.IdemPrincipalAutoConfiguration;
import dev.idem.spring.purge.IdemPurgeAutoConfiguration;
import dev.idem.spring.rabbit.IdemRabbitAutoConfiguration;
import dev.idem.spring.steps.IdemStepsAutoConfiguration;
import dev.idem.spring.transaction.IdemTransactionalAutoConfiguration;
import dev.idem.spring.web.IdemReactiveWebAutoConfiguration;
import dev.idem.spring.web.IdemWebAutoConfiguration;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * The lease-mode engine, which every part of Idem uses. It comes after every concern, as it came
 * after the configurations that {@link IdemAutoConfiguration} imported when that was the starter's
 * one auto-configuration: beans are created in the order they were registered, so which refusal
 * stops a wrong configuration first (the mode's, the store's) stays the same.
 */
@AutoConfiguration(after = {
    IdemAutoConfiguration.class,
    IdemPrincipalAutoConfiguration.class,
    IdemTransactionalAutoConfiguration.class,
    IdemStoreAutoConfiguration.class,
    IdemStepsAutoConfiguration.class,
    IdemMetricsAutoConfiguration.class,
    IdemWebAutoConfiguration.class,
    IdemReactiveWebAutoConfiguration.class,
    IdemKeyStatusAutoConfiguration.class,
    IdemMethodAutoConfiguration.class,
    IdemRabbitAutoConfiguration.class,
    IdemKafkaAutoConfiguration.class,
    IdemOutboxAutoConfiguration.class,
    IdemOpenApiAutoConfiguration.class,
    IdemPurgeAutoConfiguration.class,
    IdemGrpcAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
public class IdemLeaseAutoConfiguration {

  /**
   * The lease-mode engine. In transactional mode the filter takes no lease (only {@link Idempotent}
   * methods called outside a transaction use this engine), so a retention shorter than the default
   * lease is no configuration error there: unless {@code idem.lease} is set, the lease is then half
   * the retention.
   */
  @Bean
  @ConditionalOnMissingBean
  LeaseIdempotency idemLeaseIdempotency(
      IdemProperties p, LeaseStore store, ObjectProvider<IdemListener> listeners, Environment environment,
      ObjectProvider<ModeDecision> mode) {
    IdemListener listener = listeners.getIfUnique(() -> IdemListener.NONE);
    InProgressPolicy inProgress = inProgressPolicy(p);
    LeaseIdempotency.Builder builder = LeaseIdempotency.builder(store).listener(listener).inProgress(inProgress);
    Duration lease = p.getLease();
    ModeDecision decision = mode.getIfAvailable();
    boolean transactional = decision != null ? decision.mode == IdemProperties.Mode.TRANSACTIONAL
        : p.getMode() == IdemProperties.Mode.TRANSACTIONAL;
    if (transactional && !environment.containsProperty("idem.lease")
        && p.getRetention() != null && lease != null && p.getRetention().compareTo(lease) <= 0) {
      lease = p.getRetention().dividedBy(2);
    }
    Duration chosenLease = lease;
    configured("idem.lease", () -> builder.lease(chosenLease));
    configured("idem.retention", () -> builder.retention(p.getRetention()));
    return configured("idem.retention", builder::build);
  }
}
