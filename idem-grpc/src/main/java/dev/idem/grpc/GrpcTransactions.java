package dev.idem.grpc;

import io.grpc.Context;
import java.sql.Connection;
import java.util.Optional;

/**
 * Transactional mode for gRPC handlers: the connection of Idem's transaction, bound to the call's
 * {@link Context}.
 *
 * <p>When the {@link IdempotencyServerInterceptor} runs on a transactional engine ({@code
 * dev.idem.jdbc.TransactionalIdempotency}), the handler runs inside the transaction that also
 * claims the key and stores the answer, and {@link #connection()} returns that transaction's
 * connection: the handler's writes on it commit with the stored answer, or roll back with it (a
 * failure, a released answer), so nothing is left to reconcile. The connection is bound in the
 * context the handler is called in: a handler that answers inline reads it directly; one that
 * answers from another thread must carry the context there ({@code Context.current().wrap(task)} or
 * {@code Context.currentContextExecutor(executor)}), and must finish its writes before it answers,
 * since the transaction commits once the answer is captured. The connection belongs to Idem: do
 * not commit, roll back, close it or change its auto-commit mode. Stateless and thread-safe.
 */
public final class GrpcTransactions {

  /** The context key of the transaction's connection; absent outside a transactional effect. */
  public static final Context.Key<Connection> CONNECTION = Context.key("dev.idem.grpc.transaction-connection");

  private GrpcTransactions() {}

  /**
   * @return the connection of Idem's transaction when the current call runs as a transactional
   *     effect; empty in lease mode, on an unprotected call, or on a thread without the call's
   *     context
   */
  public static Optional<Connection> connection() {
    return Optional.ofNullable(CONNECTION.get());
  }
}
