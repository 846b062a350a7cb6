package dev.idem.spring.steps;

import static dev.idem.spring.internal.IdemSettings.configured;

import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.jdbc.steps.JdbcStepOperations;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.Idempotent;
import dev.idem.spring.store.IdemStoreAutoConfiguration;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

/**
 * Operations of several steps ({@link JdbcStepOperations}) on the application's {@link DataSource}
 * and the key table of the JDBC store ({@code idem.table}), with the lease engine's lease and
 * retention ({@code idem.lease}, {@code idem.retention}). A handler behind the filter in lease mode, or an {@link
 * Idempotent} method called outside a transaction, runs its steps under its own claim with {@link
 * JdbcStepOperations#runClaimed}; the application schedules {@link
 * JdbcStepOperations#completeAbandoned} for operations whose caller gave up. The claim must be in
 * that key table: with {@code idem.store=redis} {@code runClaimed} refuses, naming the cause. The
 * application's own bean replaces it.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemStoreAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
public class IdemStepsAutoConfiguration {

  /**
   * The step operations of the key table; tables created on first use unless {@code
   * idem.create-schema=false}. With tracing ({@link TraceContextPropagation}), an operation keeps
   * its first attempt's trace context with its input and a resumption links to it.
   */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnSingleCandidate(DataSource.class)
  JdbcStepOperations idemStepOperations(IdemProperties p, DataSource dataSource, LeaseIdempotency lease,
      ObjectProvider<TraceContextPropagation> tracing) {
    // the lease engine's lease and retention, which it validated (and chose, for transactional mode)
    JdbcStepOperations.Builder builder = JdbcStepOperations.builder(dataSource).createSchema(p.isCreateSchema())
        .lease(lease.lease()).retention(lease.retention())
        .tracing(tracing.getIfUnique(() -> TraceContextPropagation.NONE));
    configured("idem.table", () -> builder.keyTable(p.getTable()));
    return builder.build();
  }
}
