package dev.idem.spring;

import static dev.idem.spring.IdemSettings.configured;
import static dev.idem.spring.IdemSettings.inProgressPolicy;

import dev.idem.core.IdemListener;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.LeaseStore;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;

/**
 * Configures Idem from the {@code idem.*} properties ({@link IdemProperties}), unless {@code
 * idem.enabled=false}. This class holds the lease-mode engine, which every part uses, and imports
 * one configuration per concern, each with its own conditions:
 *
 * <ul>
 *   <li>{@link IdemPrincipalConfiguration}: the principal sources on the class path (Spring
 *       Security, the servlet container);
 *   <li>{@link IdemTransactionalConfiguration}: transactional mode, with spring-jdbc and spring-tx:
 *       the key table's engine and the filter's mode ({@link ModeDecisions}: with {@code
 *       idem.mode=auto}, the default, transactional when the application has one DataSource and a
 *       transaction manager of that DataSource, lease otherwise); without them {@code
 *       idem.mode=transactional} refuses to start;
 *   <li>{@link IdemStoreConfiguration}: the lease store, Redis, JDBC or memory ({@code idem.store});
 *   <li>{@link IdemMetricsConfiguration}: Micrometer's counters and store timer, with a registry;
 *   <li>{@link IdemWebConfiguration}: the {@code Idempotency-Key} filter on Spring MVC, its start-up
 *       log line, and {@link IdemHandlerExceptionResolver};
 *   <li>{@link IdemReactiveWebConfiguration}: the refusal to start a reactive web application
 *       (Spring WebFlux), whose requests the filter cannot protect;
 *   <li>{@link IdemKeyStatusConfiguration}: the key status endpoint, with {@code
 *       idem.key-status.enabled=true};
 *   <li>{@link IdemMethodConfiguration}: {@link Idempotent} service methods, and the refusal to start
 *       when a bean has them and no principal source is configured, or one of them returns a result
 *       that cannot be stored (a {@code Mono}, a {@code CompletableFuture}, a Kotlin {@code suspend}
 *       function's);
 *   <li>{@link IdemRabbitConfiguration}: {@link IdemRabbitListeners}, with spring-rabbit and
 *       idem-outbox;
 *   <li>{@link IdemKafkaConfiguration}: {@link IdemKafkaListeners}, with spring-kafka and
 *       idem-kafka;
 *   <li>{@link IdemOutboxConfiguration}: the transactional outbox on the application's DataSource
 *       ({@link IdemOutbox}, {@link IdemOutboxRelay}, {@code idem.outbox.*}), with idem-outbox and
 *       spring-jdbc.
 * </ul>
 *
 * Every bean can be replaced by one of the application's own. A wrong value stops the start-up
 * with {@link IdemConfigurationException}, and what Idem cannot protect with {@link
 * IdemUnsupportedException}. Optional libraries (spring-jdbc and spring-tx, the
 * Servlet API and Spring MVC, Spring Security, Jedis, Spring Data Redis, Micrometer, spring-rabbit, spring-kafka)
 * are only touched from configurations guarded by {@link ConditionalOnClass} with class names, so
 * the application starts with any subset of them.
 *
 * <p>Runs on Spring Boot 3.5 and 4.x: it is ordered after the DataSource, transaction manager and
 * meter registry auto-configurations of both lines (by name), and the configurations it imports
 * take that place with it; it refers to no class that only one line has, and writes the JSON of
 * {@link Idempotent} methods with Jackson 3 or Jackson 2, whichever the application has ({@link
 * JsonCodecs}).
 */
@AutoConfiguration(afterName = {
    // Spring Boot 3.x
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
    // Spring Boot 4.x: the same auto-configurations, moved into modules with new packages. Names of
    // the other line are not on the class path and Spring Boot ignores them when it sorts.
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnProperty(prefix = "idem", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(IdemProperties.class)
@Import({
    IdemPrincipalConfiguration.class,
    IdemTransactionalConfiguration.class,
    IdemStoreConfiguration.class,
    IdemStepsConfiguration.class,
    IdemMetricsConfiguration.class,
    IdemWebConfiguration.class,
    IdemReactiveWebConfiguration.class,
    IdemKeyStatusConfiguration.class,
    IdemMethodConfiguration.class,
    IdemRabbitConfiguration.class,
    IdemKafkaConfiguration.class,
    IdemOutboxConfiguration.class,
    IdemOpenApiConfiguration.class,
    IdemPurgeConfiguration.class,
    IdemGrpcConfiguration.class})
public class IdemAutoConfiguration {

  /**
   * The lease-mode engine. In transactional mode the filter takes no lease (only {@link Idempotent}
   * methods called outside a transaction use this engine), so a retention shorter than the default
   * lease is no configuration error there: unless {@code idem.lease} is set, the lease is then half
   * the retention.
   */
  @Bean
  @ConditionalOnMissingBean
  public LeaseIdempotency idemLeaseIdempotency(
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
