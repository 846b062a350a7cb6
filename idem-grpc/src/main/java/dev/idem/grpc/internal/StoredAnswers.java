package dev.idem.grpc.internal;

import dev.idem.core.StoredResponse;
import io.grpc.Metadata;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A gRPC answer as a {@link StoredResponse} and back.
 *
 * <p>The stored response's status is the HTTP status google.rpc.Code maps the gRPC code to (OK 200,
 * INVALID_ARGUMENT 400, NOT_FOUND 404, ...), so an engine's {@code ResponsePolicy} decides about it
 * as about an HTTP answer; the exact code is the field {@value #CODE}, the status description
 * (base64 of its UTF-8) {@value #DESCRIPTION}, whether a message was sent {@value #MESSAGE}, and
 * each kept trailer {@value #TRAILER_PREFIX}{@code <name>} with its values in base64 (ASCII values
 * as their bytes, binary ones as they are). The body is the response message's bytes as its
 * method's marshaller wrote them. Stateless.
 */
public final class StoredAnswers {

  /** The field of the gRPC status code, decimal. */
  public static final String CODE = "grpc-status";
  /** The field of the status description, base64 of UTF-8; absent without one. */
  public static final String DESCRIPTION = "grpc-message-base64";
  /** The field present ({@code 1}) when the handler sent a response message. */
  public static final String MESSAGE = "grpc-response-message";
  /** The prefix of a kept trailer's field. */
  public static final String TRAILER_PREFIX = "grpc-trailer-";

  private StoredAnswers() {}

  /**
   * @param status the handler's status, never {@code null}
   * @param message the marshalled response message, or {@code null} when none was sent
   * @param trailers the handler's trailers, never {@code null}
   * @param keptTrailers the trailer keys to keep, never {@code null}
   * @return the stored form, never {@code null}
   */
  public static StoredResponse toStored(
      Status status, byte @Nullable [] message, Metadata trailers, List<String> keptTrailers) {
    StoredResponse.Builder b = StoredResponse.builder(httpStatus(status.getCode()));
    b.header(CODE, Integer.toString(status.getCode().value()));
    if (status.getDescription() != null) {
      b.header(DESCRIPTION, base64(status.getDescription().getBytes(StandardCharsets.UTF_8)));
    }
    if (message != null) {
      b.header(MESSAGE, "1");
      b.body(message);
    }
    for (String name : keptTrailers) {
      if (name.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
        Iterable<byte[]> values = trailers.getAll(Metadata.Key.of(name, Metadata.BINARY_BYTE_MARSHALLER));
        if (values != null) {
          values.forEach(v -> b.header(TRAILER_PREFIX + name, base64(v)));
        }
      } else {
        Iterable<String> values = trailers.getAll(Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER));
        if (values != null) {
          values.forEach(v -> b.header(TRAILER_PREFIX + name, base64(v.getBytes(StandardCharsets.US_ASCII))));
        }
      }
    }
    return b.build();
  }

  /**
   * @param stored a response {@link #toStored} made, never {@code null}
   * @return its status, never {@code null}
   * @throws IllegalArgumentException if it holds no gRPC status
   */
  public static Status status(StoredResponse stored) {
    String code = stored.header(CODE);
    if (code == null) {
      throw new IllegalArgumentException("the stored response holds no gRPC status: " + stored);
    }
    Status status = Status.fromCodeValue(Integer.parseInt(code));
    String description = stored.header(DESCRIPTION);
    return description == null
        ? status
        : status.withDescription(new String(Base64.getDecoder().decode(description), StandardCharsets.UTF_8));
  }

  /** @return whether the stored answer has a response message (its body) */
  public static boolean hasMessage(StoredResponse stored) {
    return stored.header(MESSAGE) != null;
  }

  /**
   * @param stored a response {@link #toStored} made, never {@code null}
   * @return the kept trailers, a new instance, never {@code null}
   */
  public static Metadata trailers(StoredResponse stored) {
    Metadata trailers = new Metadata();
    for (Map.Entry<String, List<String>> field : stored.headers().entrySet()) {
      String name = field.getKey();
      if (!name.regionMatches(true, 0, TRAILER_PREFIX, 0, TRAILER_PREFIX.length())) {
        continue;
      }
      String key = name.substring(TRAILER_PREFIX.length());
      for (String value : field.getValue()) {
        byte[] bytes = Base64.getDecoder().decode(value);
        if (key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
          trailers.put(Metadata.Key.of(key, Metadata.BINARY_BYTE_MARSHALLER), bytes);
        } else {
          trailers.put(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER), new String(bytes, StandardCharsets.US_ASCII));
        }
      }
    }
    return trailers;
  }

  /**
   * The HTTP status of google.rpc.Code's mapping (google/rpc/code.proto), except CANCELLED, which
   * is 499 there and is never stored by the interceptor anyway.
   *
   * @param code the gRPC code, never {@code null}
   * @return 200 to 599
   */
  public static int httpStatus(Status.Code code) {
    switch (code) {
      case OK:
        return 200;
      case INVALID_ARGUMENT:
      case FAILED_PRECONDITION:
      case OUT_OF_RANGE:
        return 400;
      case UNAUTHENTICATED:
        return 401;
      case PERMISSION_DENIED:
        return 403;
      case NOT_FOUND:
        return 404;
      case ALREADY_EXISTS:
      case ABORTED:
        return 409;
      case RESOURCE_EXHAUSTED:
        return 429;
      case CANCELLED:
        return 499;
      case UNIMPLEMENTED:
        return 501;
      case UNAVAILABLE:
        return 503;
      case DEADLINE_EXCEEDED:
        return 504;
      case UNKNOWN:
      case INTERNAL:
      case DATA_LOSS:
      default:
        return 500;
    }
  }

  private static String base64(byte[] bytes) {
    return Base64.getEncoder().encodeToString(bytes);
  }
}
