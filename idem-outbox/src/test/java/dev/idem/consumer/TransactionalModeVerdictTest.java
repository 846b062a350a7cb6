package dev.idem.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.jdbc.JdbcIdempotency;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;

/**
 * Transactional-mode verdicts that depend on what the engine throws. No broker needed: the verdict
 * is what an adapter acts on.
 */
class TransactionalModeVerdictTest {

  /**
   * Regression: the database failing while the handler runs (a lost connection, SQLState 08) is
   * thrown by the transactional engine as an {@code IdemStoreException}: nothing committed, and
   * the store is that same database. It was a store-unavailable retry; once the consumer took
   * whatever the engine throws for the handler's own failure, it counted as a delivery and the
   * message was dead-lettered on its last one.
   */
  @Test
  void theDatabaseFailingWhileTheHandlerRunsIsAStoreFailureNotDeadLettered() {
    JdbcDataSource dataSource = new JdbcDataSource();
    dataSource.setURL("jdbc:h2:mem:" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
    JdbcIdempotency keys = JdbcIdempotency.builder().dataSource(dataSource).build();
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer consumer = IdempotentConsumer.builder("orders", keys, (connection, m) -> {
      runs.incrementAndGet();
      throw new SQLException("the connection was lost", "08006");
    }).maxDeliveries(3).build();
    InboundMessage lastDelivery = new InboundMessage("order-1", Map.of(), "{}".getBytes(StandardCharsets.UTF_8), 3, "test");
    Verdict verdict = consumer.process(lastDelivery);
    assertThat(runs.get()).isEqualTo(1);
    assertThat(verdict.action()).isEqualTo(Verdict.Action.RETRY);
    assertThat(verdict.storeUnavailable()).isTrue();
    assertThat(verdict.reason()).contains("the connection was lost");
  }

  /**
   * A handler that calls another service with Idem's HTTP client, whose retries ran out, fails
   * with the handling's own failure: retried as a delivery and dead-lettered on its last, as when
   * the client's unknown outcome was a type of its own. Since there is one {@code
   * OutcomeUnknownException}, a subtype of {@code IdemStoreException}, it must not read as the
   * store's failure (which would retry it for ever without counting deliveries).
   */
  @Test
  void aClientsUnknownOutcomeInTheHandlerIsTheHandlersFailureNotTheStores() {
    JdbcDataSource dataSource = new JdbcDataSource();
    dataSource.setURL("jdbc:h2:mem:" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
    JdbcIdempotency keys = JdbcIdempotency.builder().dataSource(dataSource).build();
    IdempotentConsumer consumer = IdempotentConsumer.builder("orders", keys, (connection, m) -> {
      throw OutcomeUnknownException.clientRetriesExhausted(IdempotencyKey.of("downstream-1"), 3, 503, "no attempts left", null,
          null, null);
    }).maxDeliveries(3).build();
    Verdict first = consumer.process(new InboundMessage("order-2", Map.of(), "{}".getBytes(StandardCharsets.UTF_8), 1, "test"));
    assertThat(first.action()).isEqualTo(Verdict.Action.RETRY);
    assertThat(first.storeUnavailable()).isFalse();
    assertThat(first.reason()).contains(OutcomeUnknownException.class.getName());
    Verdict last = consumer.process(new InboundMessage("order-2", Map.of(), "{}".getBytes(StandardCharsets.UTF_8), 3, "test"));
    assertThat(last.action()).isEqualTo(Verdict.Action.DEAD_LETTER);
    assertThat(last.storeUnavailable()).isFalse();
  }
}
