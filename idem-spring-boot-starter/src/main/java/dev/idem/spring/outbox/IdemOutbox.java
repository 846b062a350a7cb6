package dev.idem.spring.outbox;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.outbox.Intent;
import dev.idem.outbox.IntentId;
import dev.idem.outbox.IntentWriter;
import dev.idem.outbox.Outbox;
import dev.idem.spring.internal.CurrentOperation;
import dev.idem.spring.kafka.IdemKafkaListeners;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Records outbox intents in the transaction of the current idempotency key, for a handler that
 * Idem runs in transactional mode: a Spring MVC handler behind the {@code Idempotency-Key} filter,
 * or the handler of a transactional {@link IdemKafkaListeners}/{@link IdemRabbitListeners}
 * consumer. The starter's bean (with idem-outbox, spring-jdbc and one DataSource); inject it.
 *
 * <pre>{@code
 * outbox.record(Intent.kafka("orders", orderId, json)); // commits with the order and the key
 * }</pre>
 *
 * <p>The intent is a row of the {@link Outbox} table, written on the connection of the Spring
 * transaction that records the key ({@link DataSourceUtils} on the application's DataSource), so
 * it commits with the handler's writes and the key, or rolls back with them; the starter's relay
 * ({@link IdemOutboxRelay}) delivers it after the commit. A retry with the same key replays and
 * runs nothing, so it records nothing. The n-th intent recorded in the key's transaction (from 0)
 * has the id {@link IntentId#of}(scope, key, n), the scope being the one stored with the key (the
 * filter's principal and operation, or the consumer's name), exactly as {@link
 * Outbox#writer(Connection, IdempotentRequest)} names it; a transaction the database rolled back
 * and Idem runs again numbers its intents from 0 again.
 *
 * <p>Thread-safe: each thread records in its own transaction.
 */
public final class IdemOutbox {

  private final Outbox outbox;
  private final DataSource dataSource;
  private final CurrentOperation.HttpOperations http;

  IdemOutbox(Outbox outbox, DataSource dataSource, CurrentOperation.@Nullable HttpOperations http) {
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.http = http != null ? http : () -> null;
  }

  /** @return the outbox its intents go to (for {@link Outbox#intentsOf}, {@link Outbox#dead} and the like), never {@code null} */
  public Outbox outbox() {
    return outbox;
  }

  /**
   * Records an intent in the current key's transaction.
   *
   * @param intent the message or call, for example {@link Intent#kafka(String, String, byte[])},
   *     {@link Intent#rabbitMq} or {@link Intent#http}; never {@code null}
   * @return the intent's id: the {@code message-id}, {@code Nats-Msg-Id} or {@code Idempotency-Key}
   *     it is delivered with
   * @throws IllegalStateException if called outside an operation whose key Idem records in a
   *     transaction: outside a request the filter protects with a key and outside a transactional
   *     consumer's handler; in lease mode (the key is not in a transaction); outside a Spring
   *     transaction; or in another transaction than the key's (a {@code REQUIRES_NEW} method)
   * @throws IdemStoreException if the insert fails; an intent with the same id already there (a key
   *     reused while its old intents are kept) fails with the database's unique violation, and the
   *     request or message then fails
   * @throws NullPointerException if {@code intent} is {@code null}
   */
  public String record(Intent intent) {
    Objects.requireNonNull(intent, "intent");
    CurrentOperation current = CurrentOperation.consumer();
    if (current == null) {
      current = http.current();
    }
    if (current == null) {
      throw new IllegalStateException("IdemOutbox.record is called outside an operation that Idem protects: call it from a"
          + " request that the Idempotency-Key filter protects (a route of idem.required-key-routes, idem.optional-key-routes"
          + " or idem.routes, sent with a key) or from the handler of a transactional IdemKafkaListeners or"
          + " IdemRabbitListeners consumer, so that the intent commits with the key");
    }
    if (current.connection() == null) {
      throw new IllegalStateException("IdemOutbox.record is called in " + current.description() + ", which runs in lease mode:"
          + " its key is not recorded in a database transaction, so an intent cannot commit with it. Run it in"
          + " transactional mode (idem.mode=transactional or auto with the application's DataSource)");
    }
    if (!TransactionSynchronizationManager.isActualTransactionActive()
        || !TransactionSynchronizationManager.isSynchronizationActive()) {
      throw new IllegalStateException("IdemOutbox.record is called outside a Spring transaction in " + current.description()
          + ": the intent would commit on its own, apart from the key");
    }
    Connection connection = DataSourceUtils.getConnection(dataSource);
    try {
      if (connection != current.connection()) {
        throw new IllegalStateException("IdemOutbox.record is called in another transaction than the one that records the key"
            + " of " + current.description() + " (a REQUIRES_NEW or NOT_SUPPORTED method, or a transaction of another"
            + " DataSource): the intent would commit apart from the key. Record it in the key's transaction");
      }
      IntentWriter writer = writers().computeIfAbsent(current.request(), r -> outbox.writer(connection, r));
      try {
        return writer.add(intent);
      } catch (SQLException e) {
        throw new IdemStoreException("outbox (" + outbox.table() + "): cannot record " + intent + " in "
            + current.description() + ": " + e.getMessage() + " [SQLState " + e.getSQLState() + "]", e);
      }
    } finally {
      DataSourceUtils.releaseConnection(connection, dataSource);
    }
  }

  /**
   * The writers of the current transaction, one per operation, bound to it as a resource and
   * closed when it completes: each numbers its operation's intents from 0.
   */
  @SuppressWarnings("unchecked")
  private Map<IdempotentRequest, IntentWriter> writers() {
    Object bound = TransactionSynchronizationManager.getResource(this);
    if (bound != null) {
      return (Map<IdempotentRequest, IntentWriter>) bound;
    }
    Map<IdempotentRequest, IntentWriter> writers = new HashMap<>();
    TransactionSynchronizationManager.bindResource(this, writers);
    TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
      @Override
      public void afterCompletion(int status) {
        TransactionSynchronizationManager.unbindResourceIfPossible(IdemOutbox.this);
        for (IntentWriter w : writers.values()) {
          try {
            w.close();
          } catch (SQLException | RuntimeException ignored) {
            // the statement goes with its connection
          }
        }
      }
    });
    return writers;
  }

  @Override
  public String toString() {
    return "IdemOutbox[" + outbox.table() + "]";
  }
}
