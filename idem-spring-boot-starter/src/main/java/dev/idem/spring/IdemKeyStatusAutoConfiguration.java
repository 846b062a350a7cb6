package dev.idem.spring;

import static dev.idem.spring.IdemSettings.configured;

import dev.idem.core.IdemStoreException;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.spi.LeaseStore;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyStatusEndpoint;
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
    KeyStatusReader reader = reader(readers.size() == 1 ? readers.get(0) : null, mode.getIfAvailable(), store.getIfAvailable(),
        dataSource.getIfUnique());
    // @Idempotent methods' keys (operation=charge): their principal, in the stores they record in
    List<KeyStatusReader> methodStores = new java.util.ArrayList<>();
    JdbcIdempotency keys = jdbc.getIfUnique();
    DataSource ds = dataSource.getIfUnique();
    if (keys != null && ds != null) {
      methodStores.add(onDataSource(keys, ds));
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

  /** @return a reader of the key table on a connection of its own, in auto-commit */
  static KeyStatusReader onDataSource(JdbcIdempotency keys, DataSource dataSource) {
    return (scope, key) -> {
      try (Connection c = dataSource.getConnection()) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        return keys.status(c, scope, key);
      } catch (SQLException e) {
        throw new IdemStoreException("cannot get a connection from the data source: " + e.getMessage(), e);
      }
    };
  }

  /** @return the reader of the store the filter's keys are in */
  static KeyStatusReader reader(KeyStatusReader own, ModeDecision mode, LeaseStore store, DataSource dataSource) {
    if (own != null) {
      return own;
    }
    if (mode != null && mode.engine != null) {
      if (dataSource == null) {
        throw new IdemConfigurationException("idem.key-status.enabled",
            "transactional mode without a single DataSource: define a KeyStatusReader bean", null);
      }
      return onDataSource(mode.engine.keys(), dataSource);
    }
    LeaseStore s = store instanceof TimedLeaseStore timed ? timed.delegate() : store;
    if (s instanceof KeyStatusReader reader) {
      return reader;
    }
    throw new IdemConfigurationException("idem.key-status.enabled", "the lease store "
        + (s == null ? "is missing" : s.getClass().getName() + " does not read key statuses (KeyStatusReader)")
        + ": define a KeyStatusReader bean of that store", null);
  }
}
