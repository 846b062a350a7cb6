package dev.idem.spring;

import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@link IdemKafkaListeners} for {@code @KafkaListener} methods, only when spring-kafka and
 * idem-kafka are on the class path.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = {"org.springframework.kafka.support.Acknowledgment", "dev.idem.kafka.KafkaRecordHandler"})
class IdemKafkaConfiguration {

  @Bean
  @ConditionalOnMissingBean
  IdemKafkaListeners idemKafkaListeners(ObjectProvider<JdbcIdempotency> jdbc, ObjectProvider<DataSource> dataSource,
      ObjectProvider<LeaseIdempotency> leases, ListableBeanFactory beans) {
    return new IdemKafkaListeners(new ConsumerEngines(jdbc, dataSource, leases, beans));
  }

  @Bean
  IdemKafkaContainers idemKafkaContainers(ListableBeanFactory beans) {
    return new IdemKafkaContainers(beans);
  }
}
