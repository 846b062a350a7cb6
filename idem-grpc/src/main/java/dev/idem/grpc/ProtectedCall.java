package dev.idem.grpc;

import dev.idem.core.AttemptResult;
import dev.idem.core.EffectContext;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.grpc.internal.CapturingServerCall;
import dev.idem.grpc.internal.Refusals;
import dev.idem.grpc.internal.StoredAnswers;
import io.grpc.Context;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The listener of one protected unary call ({@link IdempotencyServerInterceptor}): runs the
 * handler's {@code onHalfClose} as the engine's effect, then sends the captured answer, the stored
 * one, or a refusal. One instance per call, used by grpc-java's serialized listener callbacks.
 */
final class ProtectedCall<ReqT, RespT> extends ForwardingServerCallListener.SimpleForwardingServerCallListener<ReqT> {

  /** The statuses that are transient in gRPC's terms: their answer always releases the key. */
  private static final Set<Status.Code> TRANSIENT = EnumSet.of(
      Status.Code.CANCELLED, Status.Code.UNKNOWN, Status.Code.DEADLINE_EXCEEDED,
      Status.Code.RESOURCE_EXHAUSTED, Status.Code.ABORTED, Status.Code.INTERNAL,
      Status.Code.UNAVAILABLE, Status.Code.DATA_LOSS);

  private final CapturingServerCall<ReqT, RespT> capture;
  private final IdempotencyEngine engine;
  private final boolean keyRequired;
  private final Scope scope;
  private final @Nullable String headerKey;
  private final @Nullable Function<Object, @Nullable String> field;
  private @Nullable ReqT request;

  private final List<String> keptTrailers;
  private final Duration answerTimeout;
  private final Duration storeRetryDelay;

  ProtectedCall(ServerCall.Listener<ReqT> handler, CapturingServerCall<ReqT, RespT> capture, IdempotencyEngine engine,
      boolean keyRequired, Scope scope, @Nullable String headerKey, @Nullable Function<Object, @Nullable String> field,
      List<String> keptTrailers, Duration answerTimeout, Duration storeRetryDelay) {
    super(handler);
    this.keptTrailers = keptTrailers;
    this.answerTimeout = answerTimeout;
    this.storeRetryDelay = storeRetryDelay;
    this.capture = capture;
    this.engine = engine;
    this.keyRequired = keyRequired;
    this.scope = scope;
    this.headerKey = headerKey;
    this.field = field;
  }

  @Override
  public void onMessage(ReqT message) {
    if (request == null) {
      request = message;
    }
    super.onMessage(message);
  }

  @Override
  public void onHalfClose() {
    ReqT req = request;
    if (req == null || capture.closedEarly()) {
      super.onHalfClose(); // no request (the handler refuses it), or already answered
      return;
    }
    String raw = field == null ? null : field.apply(req);
    if (raw == null || raw.isEmpty()) {
      raw = headerKey;
    }
    if (raw == null) {
      if (!keyRequired) {
        super.onHalfClose();
        return;
      }
      Refusals.refuse(capture.answerDirectly(), Status.Code.INVALID_ARGUMENT, "KEY_MISSING",
          "this method requires an idempotency key", null);
      return;
    }
    IdempotencyKey key;
    try {
      key = IdempotencyKey.of(raw);
    } catch (InvalidIdempotencyKeyException e) {
      Refusals.refuse(capture.answerDirectly(), Status.Code.INVALID_ARGUMENT, "KEY_INVALID",
          "invalid idempotency key: " + e.getMessage(), null);
      return;
    }
    MethodDescriptor<ReqT, RespT> method = capture.getMethodDescriptor();
    Fingerprint fingerprint = MessageFingerprints.of(method, req);
    AttemptResult result;
    try {
      result = engine.attempt(new IdempotentRequest(scope, key, fingerprint), ctx -> runHandler(method, ctx));
    } catch (TransientAnswer e) {
      capture.sendCaptured(); // released: the handler's own answer
      return;
    } catch (NoAnswer e) {
      Refusals.refuse(capture.answerDirectly(), Status.Code.INTERNAL, "NO_ANSWER", e.getMessage(), null);
      return;
    } catch (RuntimeException | Error e) {
      capture.answerDirectly(); // the handler threw: grpc-java closes the call
      throw e;
    }
    answer(result, method);
  }

  private StoredResponse runHandler(MethodDescriptor<ReqT, RespT> method, EffectContext effect) {
    capture.startCapture();
    if (effect.inTransaction()) {
      // transactional mode: the handler's context holds the transaction's connection
      Context withConnection = Context.current().withValue(GrpcTransactions.CONNECTION, effect.connection());
      Context previous = withConnection.attach();
      try {
        super.onHalfClose();
      } finally {
        withConnection.detach(previous);
      }
    } else {
      super.onHalfClose(); // the handler runs; an inline one has answered when this returns
    }
    try {
      if (!capture.awaitClose(answerTimeout)) {
        capture.answerDirectly();
        throw new NoAnswer("the handler did not answer within " + answerTimeout);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      capture.answerDirectly();
      throw new NoAnswer("interrupted while waiting for the handler's answer");
    }
    Status status = Objects.requireNonNull(capture.capturedStatus());
    if (TRANSIENT.contains(status.getCode())) {
      throw new TransientAnswer();
    }
    RespT message = capture.capturedMessage();
    byte[] bytes = message == null ? null : MessageFingerprints.readAll(method.streamResponse(message));
    return StoredAnswers.toStored(status, bytes, Objects.requireNonNull(capture.capturedTrailers()), keptTrailers);
  }

  private void answer(AttemptResult result, MethodDescriptor<ReqT, RespT> method) {
    switch (result.kind()) {
      case EXECUTED:
      case RELEASED:
        capture.sendCaptured();
        return;
      case REPLAYED:
        replay(capture.answerDirectly(), result.outcome().orElseThrow().response(), method);
        return;
      default:
        Refusals.refuse(capture.answerDirectly(), result, storeRetryDelay);
    }
  }

  private static <ReqT, RespT> void replay(ServerCall<ReqT, RespT> call, StoredResponse stored, MethodDescriptor<ReqT, RespT> method) {
    Status status = StoredAnswers.status(stored);
    Metadata headers = new Metadata();
    headers.put(IdempotencyKeys.REPLAYED_HEADER, "true");
    call.sendHeaders(headers);
    if (StoredAnswers.hasMessage(stored)) {
      call.sendMessage(method.parseResponse(new ByteArrayInputStream(stored.body())));
    }
    call.close(status, StoredAnswers.trailers(stored));
  }

  /** The handler answered with a transient status: the claim is released, its answer sent. */
  private static final class TransientAnswer extends RuntimeException {
    private static final long serialVersionUID = 1L;

    TransientAnswer() {
      super("the handler answered with a transient status", null, false, false);
    }
  }

  /** The handler did not answer within the answer timeout. */
  private static final class NoAnswer extends RuntimeException {
    private static final long serialVersionUID = 1L;

    NoAnswer(String message) {
      super(message, null, false, false);
    }
  }
}
