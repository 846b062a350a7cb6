package dev.idem.grpc;

import dev.idem.core.IdempotencyKey;
import io.grpc.CallOptions;
import io.grpc.Metadata;
import io.grpc.stub.AbstractStub;
import java.util.Objects;
import java.util.UUID;

/**
 * The names Idem gives an idempotency key in gRPC, and the helper for callers who retry a call by
 * hand.
 *
 * <p>A key travels as the ASCII metadata entry {@value #DEFAULT_HEADER} (the HTTP header field of
 * draft-ietf-httpapi-idempotency-key-header, lower-cased as gRPC metadata keys are). A caller that
 * retries by hand makes the key <em>before</em> its loop and passes it on every attempt with {@link
 * #withKey(AbstractStub, String)}; the {@link IdempotencyClientInterceptor} then sends that key
 * instead of a fresh one. Stateless and thread-safe.
 */
public final class IdempotencyKeys {

  /** The default metadata key of an idempotency key: {@value}. */
  public static final String DEFAULT_HEADER = "idempotency-key";

  /** {@value #DEFAULT_HEADER} as an ASCII metadata key. */
  public static final Metadata.Key<String> HEADER =
      Metadata.Key.of(DEFAULT_HEADER, Metadata.ASCII_STRING_MARSHALLER);

  /**
   * The response header the server interceptor sends with a replayed answer, {@code
   * idempotent-replayed: true} (the servlet filter's {@code Idempotent-Replayed}).
   */
  public static final Metadata.Key<String> REPLAYED_HEADER =
      Metadata.Key.of("idempotent-replayed", Metadata.ASCII_STRING_MARSHALLER);

  /**
   * The call option that carries a caller's key to the {@link IdempotencyClientInterceptor}; the
   * option's default is {@code null} (no key: the interceptor makes one).
   */
  public static final CallOptions.Key<String> CALL_OPTION = CallOptions.Key.create("dev.idem.grpc.idempotency-key");

  private IdempotencyKeys() {}

  /**
   * A stub whose calls carry {@code key}: for a caller who retries by hand, with a key made once
   * before the loop (see {@link #newKey()}), so that every attempt of the one operation sends it.
   * The stub's channel must have the {@link IdempotencyClientInterceptor}, which puts the key in the
   * call's metadata.
   *
   * @param stub any stub, never {@code null}
   * @param key the key, 1 to 255 printable US-ASCII characters ({@link IdempotencyKey#of(String)})
   * @param <S> the stub's type
   * @return a new stub with the key as {@link #CALL_OPTION}, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   * @throws dev.idem.core.InvalidIdempotencyKeyException if {@code key} is no valid key
   */
  public static <S extends AbstractStub<S>> S withKey(S stub, String key) {
    Objects.requireNonNull(stub, "stub");
    return stub.withOption(CALL_OPTION, IdempotencyKey.of(key).value());
  }

  /**
   * A fresh key for one operation: a random (version 4) UUID, 36 characters.
   *
   * @return the key, never {@code null}
   */
  public static String newKey() {
    return UUID.randomUUID().toString();
  }
}
