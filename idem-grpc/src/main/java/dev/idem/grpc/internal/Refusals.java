package dev.idem.grpc.internal;

import com.google.protobuf.Any;
import com.google.rpc.ErrorInfo;
import com.google.rpc.RetryInfo;
import dev.idem.core.AttemptResult;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** Idem's refusals of a gRPC call, as statuses with {@code google.rpc} details. Stateless. */
public final class Refusals {

  /** The {@code google.rpc.ErrorInfo} domain of Idem's refusals: {@value}. */
  public static final String ERROR_DOMAIN = "idem.dev";

  private Refusals() {}

  /**
   * Closes the call with the refusal of an attempt's result (one switch over the kinds of
   * refusal; see the status table in IdempotencyServerInterceptor's documentation).
   *
   * @param storeRetryDelay the {@code RetryInfo} delay of a store failure or a rolled-back attempt
   */
  public static void refuse(ServerCall<?, ?> call, AttemptResult result, Duration storeRetryDelay) {
    String message = result.failure().map(Throwable::getMessage).orElse(result.kind().toString());
    switch (result.kind()) {
      case KEY_REUSED:
        refuse(call, Status.Code.FAILED_PRECONDITION, "KEY_REUSED", message, null);
        return;
      case IN_PROGRESS:
        refuse(call, Status.Code.UNAVAILABLE, "IN_PROGRESS", message, result.retryAfter());
        return;
      case OUTCOME_UNKNOWN:
        refuse(call, Status.Code.UNAVAILABLE, "OUTCOME_UNKNOWN", message, result.retryAfter());
        return;
      case STORE_UNAVAILABLE:
        refuse(call, Status.Code.UNAVAILABLE, "STORE_UNAVAILABLE", message, storeRetryDelay);
        return;
      case ROLLED_BACK:
        refuse(call, Status.Code.UNAVAILABLE, "ROLLED_BACK", message, storeRetryDelay);
        return;
      case REQUEST_FAILED:
        refuse(call, Status.Code.FAILED_PRECONDITION, "REQUEST_FAILED", message, null);
        return;
      case STORED_RESPONSE_UNREADABLE:
      default:
        refuse(call, Status.Code.INTERNAL, "STORED_RESPONSE_UNREADABLE", message, null);
    }
  }

  /**
   * Closes the call with a status carrying a {@code google.rpc.Status} whose details are an {@code
   * ErrorInfo} (domain {@value #ERROR_DOMAIN}, the reason) and, with a delay, a {@code RetryInfo}.
   */
  public static void refuse(ServerCall<?, ?> call, Status.Code code, String reason, @Nullable String message,
      @Nullable Duration retryAfter) {
    com.google.rpc.Status.Builder status = com.google.rpc.Status.newBuilder()
        .setCode(code.value())
        .setMessage(message == null ? reason : message)
        .addDetails(Any.pack(ErrorInfo.newBuilder().setReason(reason).setDomain(ERROR_DOMAIN).build()));
    if (retryAfter != null) {
      status.addDetails(Any.pack(RetryInfo.newBuilder()
          .setRetryDelay(com.google.protobuf.Duration.newBuilder()
              .setSeconds(retryAfter.getSeconds())
              .setNanos(retryAfter.getNano()))
          .build()));
    }
    StatusRuntimeException e = StatusProto.toStatusRuntimeException(status.build());
    Metadata trailers = e.getTrailers();
    call.close(e.getStatus(), trailers != null ? trailers : new Metadata());
  }

}
