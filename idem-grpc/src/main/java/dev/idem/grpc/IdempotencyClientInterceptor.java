package dev.idem.grpc;

import dev.idem.core.IdempotencyKey;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.util.Objects;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Gives every attempt of one logical unary call the same idempotency key, so that the server's
 * {@link IdempotencyServerInterceptor} runs it at most once.
 *
 * <p>The key is put in the call's metadata once, when the call {@linkplain ClientCall#start starts}:
 * the caller's own key from the call option {@link IdempotencyKeys#CALL_OPTION} (see {@link
 * IdempotencyKeys#withKey}), else a fresh one from the key supplier (a random UUID by default). A
 * call whose metadata already holds the key entry keeps it. Registered on the channel ({@code
 * ManagedChannelBuilder.intercept}), the interceptor runs above grpc-java's retry and hedging
 * machinery, which sends each attempt (a retry of the channel's retry policy, a hedged copy) with a
 * copy of the metadata the call started with: every attempt carries the same key. A new call (a
 * caller's own retry loop without {@code withKey}) is a new operation with a new key.
 *
 * <p>Only unary methods get a key by default (the server protects no others); {@link
 * #forMethods(Predicate)} chooses other ones. Immutable and thread-safe.
 */
public final class IdempotencyClientInterceptor implements ClientInterceptor {

  private final Metadata.Key<String> header;
  private final Supplier<String> keys;
  private final Predicate<MethodDescriptor<?, ?>> methods;

  private IdempotencyClientInterceptor(
      Metadata.Key<String> header, Supplier<String> keys, Predicate<MethodDescriptor<?, ?>> methods) {
    this.header = header;
    this.keys = keys;
    this.methods = methods;
  }

  /**
   * @return an interceptor that sends {@value IdempotencyKeys#DEFAULT_HEADER} with a random UUID on
   *     every unary call, never {@code null}
   */
  public static IdempotencyClientInterceptor create() {
    return new IdempotencyClientInterceptor(
        IdempotencyKeys.HEADER, IdempotencyKeys::newKey, m -> m.getType() == MethodDescriptor.MethodType.UNARY);
  }

  /**
   * @param headerName the metadata key the server reads, an ASCII key (not ending in {@code -bin}),
   *     never {@code null}
   * @return a copy that sends the key under {@code headerName}
   * @throws IllegalArgumentException if {@code headerName} is no valid ASCII metadata key
   */
  public IdempotencyClientInterceptor withHeader(String headerName) {
    return new IdempotencyClientInterceptor(IdempotencyServerInterceptor.asciiKey(headerName), keys, methods);
  }

  /**
   * @param keys makes a key for each call without a caller's key; called once per logical call, from
   *     the caller's thread; must be thread-safe and return valid keys, never {@code null}
   * @return a copy that makes keys with {@code keys}
   */
  public IdempotencyClientInterceptor withKeys(Supplier<String> keys) {
    return new IdempotencyClientInterceptor(header, Objects.requireNonNull(keys, "keys"), methods);
  }

  /**
   * @param methods which methods get a key (by default the unary ones), never {@code null}
   * @return a copy that keys the calls of {@code methods}
   */
  public IdempotencyClientInterceptor forMethods(Predicate<MethodDescriptor<?, ?>> methods) {
    return new IdempotencyClientInterceptor(header, keys, Objects.requireNonNull(methods, "methods"));
  }

  /**
   * {@inheritDoc}
   *
   * @throws dev.idem.core.InvalidIdempotencyKeyException from {@code start}, if the key supplier
   *     makes an invalid key
   */
  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
    ClientCall<ReqT, RespT> call = next.newCall(method, callOptions);
    if (!methods.test(method)) {
      return call;
    }
    String given = callOptions.getOption(IdempotencyKeys.CALL_OPTION);
    return new ForwardingClientCall.SimpleForwardingClientCall<>(call) {
      @Override
      public void start(Listener<RespT> responseListener, Metadata headers) {
        if (!headers.containsKey(header)) {
          headers.put(header, IdempotencyKey.of(given != null ? given : keys.get()).value());
        }
        super.start(responseListener, headers);
      }
    };
  }
}
