package dev.idem.grpc;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.MessageLite;
import dev.idem.core.Fingerprint;
import io.grpc.MethodDescriptor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Objects;

/**
 * The fingerprint of a gRPC request message: SHA-256 ({@link Fingerprint#ofBytes(byte[])}) of its
 * deterministic serialization.
 *
 * <p>Protobuf's wire form is not canonical: the same message may be written as different bytes. For
 * a protobuf message ({@link MessageLite}, which every generated message and {@code DynamicMessage}
 * is) the fingerprint is taken over {@link CodedOutputStream#useDeterministicSerialization()}, which
 * writes known fields in field-number order and <b>map entries sorted by key</b>, so two messages
 * with the same map entries inserted in different orders fingerprint equal. It does <b>not</b>
 * canonicalize everything:
 *
 * <ul>
 *   <li>unknown fields (fields the server's schema does not know, kept by the parser) are written
 *       as they came, after the known ones, in the order received;
 *   <li>a field of {@code google.protobuf.Any} holds its packed message as bytes, which are kept as
 *       sent (not re-serialized deterministically);
 *   <li>deterministic serialization is stable within one protobuf runtime and schema, not promised
 *       across versions of either: a retry that spans a deployment which changes the schema (or the
 *       runtime's writer) may see its key refused as reused, never answered with another request's
 *       result;
 *   <li>default values are not written (proto3), so a field set to its default and a field unset
 *       are the same request.
 * </ul>
 *
 * <p>Any other request type is fingerprinted over the bytes its method's request marshaller writes
 * ({@link MethodDescriptor#streamRequest}), as they come. Stateless and thread-safe.
 */
public final class MessageFingerprints {

  private MessageFingerprints() {}

  /**
   * @param message a protobuf message, never {@code null}
   * @return the SHA-256 of its deterministic serialization, never {@code null}
   * @throws NullPointerException if {@code message} is {@code null}
   */
  public static Fingerprint of(MessageLite message) {
    return Fingerprint.ofBytes(deterministicBytes(message));
  }

  /**
   * @param message a protobuf message, never {@code null}
   * @return its deterministic serialization (map entries sorted by key, unknown fields as they
   *     came), a new array, never {@code null}
   * @throws NullPointerException if {@code message} is {@code null}
   */
  public static byte[] deterministicBytes(MessageLite message) {
    Objects.requireNonNull(message, "message");
    byte[] bytes = new byte[message.getSerializedSize()];
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    out.useDeterministicSerialization();
    try {
      message.writeTo(out);
    } catch (IOException e) {
      throw new UncheckedIOException("serializing " + message.getClass().getName() + " to an array", e);
    }
    out.checkNoSpaceLeft();
    return bytes;
  }

  /**
   * The fingerprint the {@link IdempotencyServerInterceptor} takes of a request: {@link
   * #of(MessageLite)} for a protobuf message, else SHA-256 over the method's marshalled request.
   *
   * @param method the call's method, never {@code null}
   * @param request the request message, never {@code null}
   * @param <ReqT> the request type
   * @return the fingerprint, never {@code null}
   * @throws UncheckedIOException if the marshaller's stream fails
   */
  public static <ReqT> Fingerprint of(MethodDescriptor<ReqT, ?> method, ReqT request) {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(request, "request");
    if (request instanceof MessageLite) {
      return of((MessageLite) request);
    }
    return Fingerprint.ofBytes(readAll(method.streamRequest(request)));
  }

  static byte[] readAll(InputStream in) {
    try (InputStream stream = in) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      stream.transferTo(out);
      return out.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException("reading a marshalled message", e);
    }
  }
}
