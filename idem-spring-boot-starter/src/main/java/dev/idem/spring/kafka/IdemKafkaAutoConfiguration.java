package dev.idem.spring.kafka;

import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.internal.ConsumerEngines;
import dev.idem.spring.rabbit.IdemRabbitAutoConfiguration;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * {@link IdemKafkaListeners} for {@code @KafkaListener} methods, only when spring-kafka and
 * idem-kafka are on the class path.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemRabbitAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springframework.kafka.support.Acknowledgment", "dev.idem.kafka.KafkaRecordHandler"})
public class IdemKafkaAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  IdemKafkaListeners idemKafkaListeners(ObjectProvider<JdbcIdempotency> jdbc, ObjectProvider<DataSource> dataSource,
      ObjectProvider<LeaseIdempotency> leases, ListableBeanFactory beans, ObjectProvider<TraceContextPropagation> tracing) {
    return new IdemKafkaListeners(new ConsumerEngines(jdbc, dataSource, leases, beans, tracing));
  }

  @Bean
  IdemKafkaContainers idemKafkaContainers(ListableBeanFactory beans) {
    return new IdemKafkaContainers(beans);
  }
}
