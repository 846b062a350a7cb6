package dev.idem.spring.rabbit;

import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.internal.ConsumerEngines;
import dev.idem.spring.method.IdemMethodAutoConfiguration;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * {@link IdemRabbitListeners} for {@code @RabbitListener} methods, only when spring-rabbit and
 * idem-rabbitmq (with the RabbitMQ client) are on the class path.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemMethodAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springframework.amqp.rabbit.support.DefaultMessagePropertiesConverter",
    "dev.idem.rabbitmq.RabbitMqIdempotentConsumer", "com.rabbitmq.client.Channel"})
public class IdemRabbitAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  IdemRabbitListeners idemRabbitListeners(ObjectProvider<JdbcIdempotency> jdbc, ObjectProvider<DataSource> dataSource,
      ObjectProvider<LeaseIdempotency> leases, ListableBeanFactory beans, ObjectProvider<TraceContextPropagation> tracing) {
    return new IdemRabbitListeners(new ConsumerEngines(jdbc, dataSource, leases, beans, tracing));
  }

  @Bean
  IdemRabbitContainers idemRabbitContainers(ListableBeanFactory beans) {
    return new IdemRabbitContainers(beans);
  }
}
