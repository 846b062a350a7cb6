package dev.idem.spring.keystatus;

import static dev.idem.spring.internal.IdemSettings.configured;

import dev.idem.core.IdemStoreException;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.spi.LeaseStore;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyStatusEndpoint;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdemStoreDecorator;
import dev.idem.spring.Idempotent;
import dev.idem.spring.internal.IdemPrincipals;
import dev.idem.spring.internal.KeyStatusReaders;
import dev.idem.spring.internal.ModeDecision;
import dev.idem.spring.internal.PrincipalIntegration;
import dev.idem.spring.internal.TimedLeaseStore;
import dev.idem.spring.web.IdemReactiveWebAutoConfiguration;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;

/**
 * The key status endpoint ({@link KeyStatusEndpoint}) on a servlet web application, with {@code
 * idem.key-status.enabled=true} ({@link IdemKeyStatusProperties}). It reads the store of the
 * filter's mode: in transactional mode the key table of the application's DataSource, in lease
 * mode the lease store (the memory, JDBC and Redis stores all read statuses; a store wrapped by
 * the application's own {@link IdemStoreDecorator} needs a {@link KeyStatusReader} bean of the
 * application's). A single {@link KeyStatusReader} bean of the application's that is not itself a
 * store (a {@link LeaseStore} or {@link JdbcIdempotency}, which read statuses too) replaces that
 * choice.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemReactiveWebAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = {"jakarta.servlet.Filter", "org.springframework.boot.web.servlet.FilterRegistrationBean"})
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnProperty(prefix = "idem.key-status", name = "enabled", havingValue = "true")
@EnableConfigurationProperties(IdemKeyStatusProperties.class)
public class IdemKeyStatusAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean(name = "idemKeyStatusEndpoint")
  FilterRegistrationBean<KeyStatusEndpoint> idemKeyStatusEndpoint(
      IdemKeyStatusProperties p,
      IdempotencyFilterConfig config,
      ObjectProvider<KeyStatusReader> own,
      ObjectProvider<ModeDecision> mode,
      ObjectProvider<LeaseStore> store,
      ObjectProvider<DataSource> dataSource,
      org.springframework.beans.factory.config.ConfigurableListableBeanFactory beans,
      IdemProperties idem,
      ObjectProvider<JdbcIdempotency> jdbc,
      ObjectProvider<PrincipalResolver<Object>> methodPrincipals,
      ObjectProvider<PrincipalIntegration> integrations) {
    // The stores Idem builds are KeyStatusReaders themselves; the application's own reader is one that is not a store.
    List<KeyStatusReader> readers = own.orderedStream()
        .filter(r -> !(r instanceof LeaseStore) && !(r instanceof JdbcIdempotency)).toList();
    KeyStatusReader reader = KeyStatusReaders.reader(readers.size() == 1 ? readers.get(0) : null, mode.getIfAvailable(), store.getIfAvailable(),
        dataSource.getIfUnique());
    // @Idempotent methods' keys (operation=charge): their principal, in the stores they record in
    List<KeyStatusReader> methodStores = new java.util.ArrayList<>();
    JdbcIdempotency keys = jdbc.getIfUnique();
    DataSource ds = dataSource.getIfUnique();
    if (keys != null && ds != null) {
      methodStores.add(KeyStatusReaders.onDataSource(keys, ds));
    }
    LeaseStore leaseStore = store.getIfAvailable();
    LeaseStore plain = leaseStore instanceof TimedLeaseStore timed ? timed.delegate() : leaseStore;
    if (plain instanceof KeyStatusReader methodReader) {
      methodStores.add(methodReader);
    }
    MethodKeyStatuses methods = new MethodKeyStatuses(beans, () -> IdemPrincipals.forMethods(idem, methodPrincipals.getIfAvailable(),
        integrations.orderedStream().toList()), idem.getAnonymousPrincipal(), methodStores);
    KeyStatusEndpoint endpoint = configured("idem.key-status.path", () -> new KeyStatusEndpoint(config, reader, p.getPath(), methods));
    FilterRegistrationBean<KeyStatusEndpoint> registration = new FilterRegistrationBean<>(endpoint);
    registration.setName("idemKeyStatusEndpoint");
    registration.addUrlPatterns(endpoint.path() + "/*");
    // After security filters (which set the principal), before the Idempotency-Key filter.
    registration.setOrder(Ordered.LOWEST_PRECEDENCE - 101);
    return registration;
  }

}
