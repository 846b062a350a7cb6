package dev.idem.outbox;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.spi.TraceContextPropagation;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Records the intents of one operation in the outbox, on the operation's connection and inside its
 * transaction. The n-th intent added (from 0) gets the id {@link IntentId#of}(scope, key, n), so
 * running the same operation again (after a rollback) names its intents the same way.
 *
 * <p>Get one from {@link Outbox#effect} (one per run of the effect) or {@link Outbox#writer}. Not
 * thread-safe: use it on the effect's thread, during the effect.
 */
public final class IntentWriter implements AutoCloseable {

  private final Outbox outbox;
  private final Connection connection;
  private final IdempotentRequest request;
  private final List<String> ids = new ArrayList<>();
  private @Nullable PreparedStatement insert;
  private boolean closed;

  IntentWriter(Outbox outbox, Connection connection, IdempotentRequest request) {
    this.outbox = outbox;
    this.connection = connection;
    this.request = request;
  }

  /**
   * Inserts the intent as {@link OutboxEntry.State#PENDING}, due at once. It becomes visible to
   * relays when the transaction commits, and disappears with it on rollback.
   *
   * @param intent the intent, never {@code null}
   * @return its id: the message id, {@code Nats-Msg-Id} or {@code Idempotency-Key} it is delivered with
   * @throws SQLException if the insert fails. A row with the same id already there (the same key
   *     reused after its retention while the old intents are still kept, or a racing duplicate of
   *     {@link dev.idem.jdbc.JdbcIdempotency.Strategy#KEY_LAST}) fails with the database's
   *     unique-violation SQLState (23xxx); the transaction must then roll back
   * @throws IllegalStateException if the writer was closed
   */
  public String add(Intent intent) throws SQLException {
    if (closed) {
      throw new IllegalStateException("the intent writer is closed: record intents during the effect");
    }
    if (insert == null) {
      insert = connection.prepareStatement(outbox.sql(connection).insert);
    }
    String id = IntentId.of(request.scope(), request.key(), ids.size());
    outbox.insert(insert, id, request, ids.size(), traced(outbox.tracing(), intent));
    ids.add(id);
    return id;
  }

  /**
   * The intent as stored: with the trace context current when it is added (see {@link
   * Outbox.Builder#tracing}), unless the intent carries a header of that name already.
   */
  static Intent traced(TraceContextPropagation tracing, Intent intent) {
    Intent traced = intent;
    try {
      for (Map.Entry<String, String> h : tracing.currentContext().entrySet()) {
        String name = h.getKey();
        String value = h.getValue();
        Intent current = traced;
        // a name the intent has (or the tracer gave already in another case) is kept; a value that
        // an intent cannot carry or that a transport would refuse (CR, more than 8000 characters,
        // not printable ASCII as every trace header is: NATS refuses it) is dropped
        if (name != null && value != null && value.chars().allMatch(c -> c == '\t' || c >= 0x20 && c < 0x7f)
            && current.headers().stream().noneMatch(e -> e.getKey().equalsIgnoreCase(name))) {
          try {
            traced = current.withHeader(name, value);
          } catch (IllegalArgumentException notAHeader) {
            // dropped
          }
        }
      }
    } catch (RuntimeException e) {
      return intent; // tracing never fails a request: a tracer that fails (or gives null) adds nothing
    }
    return traced;
  }

  /** @return the ids of the intents added so far, in order; immutable */
  public List<String> ids() {
    return Collections.unmodifiableList(new ArrayList<>(ids));
  }

  /** Closes the prepared statement; the intents stay in the transaction. */
  @Override
  public void close() throws SQLException {
    closed = true;
    if (insert != null) {
      insert.close();
      insert = null;
    }
  }
}
