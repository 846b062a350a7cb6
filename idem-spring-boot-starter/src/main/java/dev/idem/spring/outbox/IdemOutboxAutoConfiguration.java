package dev.idem.spring.outbox;

import static dev.idem.spring.internal.IdemSettings.configured;
import static dev.idem.spring.internal.ModeDecisions.DATA_SOURCE_UTILS;
import static dev.idem.spring.internal.ModeDecisions.TRANSACTION_MANAGER;

import dev.idem.core.IdemStoreException;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.jdbc.Dialect;
import dev.idem.outbox.Intent;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.spi.IntentTransport;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.internal.CurrentOperation;
import dev.idem.spring.kafka.IdemKafkaAutoConfiguration;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.ClassUtils;

/**
 * The transactional outbox on the application's DataSource, with idem-outbox, spring-jdbc and
 * spring-tx on the class path and {@code idem.outbox.enabled} (default true): the {@link Outbox}
 * (table {@code idem.outbox.table}, created at start-up with {@code idem.create-schema}), the
 * {@link IdemOutbox} that handlers record intents with, and the {@link IdemOutboxRelay} ({@code
 * idem.outbox.relay.*}). The relay's transports: Spring Kafka's {@code ProducerFactory} through
 * idem-kafka's {@code KafkaTransport} (with spring-kafka and idem-kafka), Spring AMQP's {@code
 * ConnectionFactory} through idem-rabbitmq's {@code RabbitMqTransport} (with spring-rabbit and
 * idem-rabbitmq), and the application's {@link IntentTransport} beans, which replace the starter's
 * of their kind (for JetStream with idem-jetstream, HTTP, or a producer of its own). The optional libraries are only touched when {@link
 * ClassUtils#isPresent} found them.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemKafkaAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = {"dev.idem.outbox.Outbox", TRANSACTION_MANAGER, DATA_SOURCE_UTILS})
@ConditionalOnProperty(prefix = "idem.outbox", name = "enabled", havingValue = "true", matchIfMissing = true)
@ConditionalOnSingleCandidate(DataSource.class)
public class IdemOutboxAutoConfiguration {

  private static final Logger LOG = LoggerFactory.getLogger(IdemOutboxAutoConfiguration.class);

  /** The outbox table, created at start-up with {@code idem.create-schema}. */
  @Bean
  @ConditionalOnMissingBean
  Outbox idemOutboxTable(IdemProperties p, DataSource dataSource, ObjectProvider<TraceContextPropagation> tracing) {
    // the current span's context goes with each intent (IdemTracingAutoConfiguration's, with Micrometer Tracing)
    TraceContextPropagation propagation = tracing.getIfUnique(() -> TraceContextPropagation.NONE);
    Outbox outbox = configured("idem.outbox.table",
        () -> Outbox.builder().table(p.getOutbox().getTable()).tracing(propagation).build());
    if (!p.isCreateSchema()) {
      return outbox;
    }
    try (Connection c = dataSource.getConnection()) {
      try {
        Dialect.of(c);
      } catch (IdemStoreException unsupported) {
        LOG.warn("Idem: the outbox table {} is not created: {}", outbox.table(), unsupported.getMessage());
        return outbox;
      }
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true); // a pool with auto-commit off would roll the DDL back on PostgreSQL
      }
      outbox.createSchema(c);
    } catch (SQLException e) {
      throw new IdemStoreException("cannot create the outbox table " + outbox.table() + ": " + e.getMessage(), e);
    }
    return outbox;
  }

  /** Records intents in the current key's transaction. */
  @Bean
  @ConditionalOnMissingBean
  IdemOutbox idemOutbox(Outbox outbox, DataSource dataSource, ObjectProvider<CurrentOperation.HttpOperations> http) {
    return new IdemOutbox(outbox, dataSource, http.getIfAvailable());
  }

  /** The relay, started and stopped with the context; without a transport it logs so and never runs. */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = "idem.outbox.relay", name = "enabled", havingValue = "true", matchIfMissing = true)
  IdemOutboxRelay idemOutboxRelay(IdemProperties p, Outbox outbox, DataSource dataSource, ListableBeanFactory beans) {
    IdemProperties.Relay settings = p.getOutbox().getRelay();
    configured("idem.outbox.relay.interval", () -> {
      if (settings.getInterval() == null || settings.getInterval().toMillis() < 1) {
        throw new IllegalArgumentException("must be at least 1ms, was " + settings.getInterval());
      }
      return settings.getInterval();
    });
    OutboxRelay.Builder builder = OutboxRelay.builder(outbox, dataSource);
    configured("idem.outbox.relay.batch-size", () -> builder.batchSize(settings.getBatchSize()));
    configured("idem.outbox.relay.lease", () -> builder.lease(settings.getLease()));
    configured("idem.outbox.relay.max-attempts", () -> builder.maxAttempts(settings.getMaxAttempts()));
    Map<Intent.Kind, IntentTransport> transports = new EnumMap<>(Intent.Kind.class);
    List<AutoCloseable> own = new ArrayList<>();
    ClassLoader loader = IdemOutboxAutoConfiguration.class.getClassLoader();
    if (ClassUtils.isPresent("org.springframework.kafka.core.ProducerFactory", loader)
        && ClassUtils.isPresent("dev.idem.kafka.KafkaTransport", loader)) {
      SpringKafkaTransport kafka = KafkaTransports.fromProducerFactory(beans);
      if (kafka != null) {
        transports.put(kafka.kind(), kafka);
        own.add(kafka);
      }
    }
    if (ClassUtils.isPresent("org.springframework.amqp.rabbit.connection.ConnectionFactory", loader)
        && ClassUtils.isPresent("com.rabbitmq.client.Channel", loader)
        && ClassUtils.isPresent("dev.idem.rabbitmq.RabbitMqTransport", loader)) {
      SpringRabbitTransport rabbit = RabbitTransports.fromConnectionFactory(beans);
      if (rabbit != null) {
        transports.put(rabbit.kind(), rabbit);
        own.add(rabbit);
      }
    }
    beans.getBeanProvider(IntentTransport.class).orderedStream().forEach(t -> transports.put(t.kind(), t));
    Map<Intent.Kind, String> described = new EnumMap<>(Intent.Kind.class);
    transports.forEach((kind, t) -> {
      builder.transport(t);
      described.put(kind, IdemOutboxRelay.describe(t));
    });
    OutboxRelay relay = transports.isEmpty() ? null : builder.build();
    return new IdemOutboxRelay(outbox, dataSource, relay, described, settings.getInterval(), settings.getBatchSize(), own);
  }

  /** The request the filter protects, found through Spring MVC's request attributes. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"org.springframework.web.context.request.RequestContextHolder", "jakarta.servlet.ServletRequest"})
  static class HttpConfiguration {
    @Bean
    CurrentOperation.HttpOperations idemOutboxHttpOperations() {
      return () -> {
        if (!(org.springframework.web.context.request.RequestContextHolder.getRequestAttributes()
            instanceof org.springframework.web.context.request.ServletRequestAttributes servlet)) {
          return null;
        }
        jakarta.servlet.http.HttpServletRequest request = servlet.getRequest();
        return IdempotencyFilter.protectedRequest(request)
            .map(r -> new CurrentOperation(r, IdempotencyFilter.connection(request).orElse(null),
                "the request " + r.scope().operation()))
            .orElse(null);
      };
    }
  }

  /** Touches spring-kafka and idem-kafka; loaded only when both are present. */
  static final class KafkaTransports {
    private KafkaTransports() {}

    static SpringKafkaTransport fromProducerFactory(ListableBeanFactory beans) {
      org.springframework.kafka.core.ProducerFactory<?, ?> factory =
          beans.getBeanProvider(org.springframework.kafka.core.ProducerFactory.class).getIfUnique();
      return factory == null ? null
          : configured("spring.kafka.producer", () -> new SpringKafkaTransport(factory));
    }
  }

  /** Touches spring-rabbit, the RabbitMQ client and idem-rabbitmq; loaded only when all three are present. */
  static final class RabbitTransports {
    private RabbitTransports() {}

    static SpringRabbitTransport fromConnectionFactory(ListableBeanFactory beans) {
      org.springframework.amqp.rabbit.connection.ConnectionFactory factory =
          beans.getBeanProvider(org.springframework.amqp.rabbit.connection.ConnectionFactory.class).getIfUnique();
      return factory == null ? null : new SpringRabbitTransport(factory);
    }
  }
}
