package dev.idem.spring;

import dev.idem.spring.grpc.IdemGrpcAutoConfiguration;
import dev.idem.spring.kafka.IdemKafkaAutoConfiguration;
import dev.idem.spring.kafka.IdemKafkaListeners;
import dev.idem.spring.keystatus.IdemKeyStatusAutoConfiguration;
import dev.idem.spring.method.IdemMethodAutoConfiguration;
import dev.idem.spring.observation.IdemMetricsAutoConfiguration;
import dev.idem.spring.openapi.IdemOpenApiAutoConfiguration;
import dev.idem.spring.outbox.IdemOutbox;
import dev.idem.spring.outbox.IdemOutboxAutoConfiguration;
import dev.idem.spring.outbox.IdemOutboxRelay;
import dev.idem.spring.principal.IdemPrincipalAutoConfiguration;
import dev.idem.spring.purge.IdemPurgeAutoConfiguration;
import dev.idem.spring.rabbit.IdemRabbitAutoConfiguration;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import dev.idem.spring.steps.IdemStepsAutoConfiguration;
import dev.idem.spring.store.IdemLeaseAutoConfiguration;
import dev.idem.spring.store.IdemStoreAutoConfiguration;
import dev.idem.spring.transaction.IdemTransactionalAutoConfiguration;
import dev.idem.spring.web.IdemReactiveWebAutoConfiguration;
import dev.idem.spring.web.IdemWebAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;

/**
 * Configures Idem from the {@code idem.*} properties ({@link IdemProperties}), unless {@code
 * idem.enabled=false}. This class binds the properties and orders Idem after Spring Boot's own
 * auto-configurations; the lease-mode engine, which every part uses, is {@link
 * IdemLeaseAutoConfiguration}. Each concern
 * is an auto-configuration of its own, listed beside this one in {@code
 * META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports}, ordered after
 * this one and run only when this one runs ({@code @ConditionalOnBean(IdemAutoConfiguration.class)}:
 * {@code idem.enabled=false}, or excluding this class, switches all of them off). They are ordered
 * after one another as listed here (each names the one before it in {@code after}), the order in
 * which this class imported them when it was the starter's one auto-configuration, so their beans
 * are registered and created in the same order as before. An application can exclude one concern
 * ({@code spring.autoconfigure.exclude}) and keep the others:
 *
 * <ul>
 *   <li>{@link IdemPrincipalAutoConfiguration}: the principal sources on the class path (Spring
 *       Security, the servlet container);
 *   <li>{@link IdemTransactionalAutoConfiguration}: transactional mode, with spring-jdbc and spring-tx:
 *       the key table's engine and the filter's mode ({@code ModeDecisions}: with {@code
 *       idem.mode=auto}, the default, transactional when the application has one DataSource and a
 *       transaction manager of that DataSource, lease otherwise); without them {@code
 *       idem.mode=transactional} refuses to start;
 *   <li>{@link IdemStoreAutoConfiguration}: the lease store, Redis, JDBC or memory ({@code
 *       idem.store}); excluding it needs a {@code LeaseStore} bean of the application's own;
 *   <li>{@link IdemStepsAutoConfiguration}: the steps table of {@link Idempotent} methods, with one
 *       DataSource;
 *   <li>{@link IdemMetricsAutoConfiguration}: Micrometer's counters and store timer, with a registry;
 *   <li>{@link IdemWebAutoConfiguration}: the {@code Idempotency-Key} filter on Spring MVC, its
 *       start-up log line, and {@code IdemHandlerExceptionResolver};
 *   <li>{@link IdemReactiveWebAutoConfiguration}: the refusal to start a reactive web application
 *       (Spring WebFlux), whose requests the filter cannot protect;
 *   <li>{@link IdemKeyStatusAutoConfiguration}: the key status endpoint, with {@code
 *       idem.key-status.enabled=true};
 *   <li>{@link IdemMethodAutoConfiguration}: {@link Idempotent} service methods, and the refusal to
 *       start when a bean has them and no principal source is configured, or one of them returns a
 *       result that cannot be stored (a {@code Mono}, a {@code CompletableFuture}, a Kotlin {@code
 *       suspend} function's);
 *   <li>{@link IdemRabbitAutoConfiguration}: {@link IdemRabbitListeners}, with spring-rabbit and
 *       idem-rabbitmq;
 *   <li>{@link IdemKafkaAutoConfiguration}: {@link IdemKafkaListeners}, with spring-kafka and
 *       idem-kafka;
 *   <li>{@link IdemOutboxAutoConfiguration}: the transactional outbox on the application's DataSource
 *       ({@link IdemOutbox}, {@link IdemOutboxRelay}, {@code idem.outbox.*}), with idem-outbox and
 *       spring-jdbc;
 *   <li>{@link IdemOpenApiAutoConfiguration}: the {@code Idempotency-Key} header in springdoc's
 *       OpenAPI document, after {@link IdemWebAutoConfiguration};
 *   <li>{@link IdemPurgeAutoConfiguration}: the purge of expired keys ({@code idem.purge.*});
 *   <li>{@link IdemGrpcAutoConfiguration}: Idem's gRPC server interceptor, with Spring gRPC and
 *       idem-grpc;
 *   <li>{@link IdemLeaseAutoConfiguration}: the lease-mode engine, after all of the above.
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
 * meter registry auto-configurations of both lines (by name), and the concerns, ordered after it,
 * come after them too (Spring Boot's ordering is transitive); it refers to no class that only one
 * line has, and writes the JSON of {@link Idempotent} methods with Jackson 3 or Jackson 2, whichever
 * the application has ({@code JsonCodecs}).
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
public class IdemAutoConfiguration {}
