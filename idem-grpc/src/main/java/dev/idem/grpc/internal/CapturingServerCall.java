package dev.idem.grpc.internal;

import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The server call a protected unary handler answers on. It forwards everything until {@link
 * #startCapture()}; from then on it keeps the handler's headers, message and close instead of
 * sending them, until the interceptor sends the answer itself ({@link #sendCaptured()}) or answers
 * otherwise ({@link #answerDirectly()}), after which whatever the handler still sends is dropped.
 *
 * <p>While capturing, {@link #isCancelled()} answers {@code false}: the handler of an effect that
 * already began finishes and its answer is stored, even when the client gave up on this attempt,
 * so that the client's retry is replayed. Thread-safe: the handler may answer from any thread.
 *
 * @param <ReqT> the request type
 * @param <RespT> the response type
 */
public final class CapturingServerCall<ReqT, RespT>
    extends ForwardingServerCall.SimpleForwardingServerCall<ReqT, RespT> {

  private enum Mode { FORWARD, CAPTURE, DONE }

  private final CountDownLatch closed = new CountDownLatch(1);
  private Mode mode = Mode.FORWARD;
  private @Nullable Metadata headers;
  private @Nullable RespT message;
  private @Nullable Status status;
  private @Nullable Metadata trailers;
  private boolean closedEarly;

  /** @param call the transport's call, never {@code null} */
  public CapturingServerCall(ServerCall<ReqT, RespT> call) {
    super(call);
  }

  /** From now on keeps the handler's answer instead of sending it. */
  public synchronized void startCapture() {
    mode = Mode.CAPTURE;
  }

  /**
   * Waits for the handler to close the call.
   *
   * @param timeout the longest wait, positive
   * @return {@code true} when the handler closed the call within {@code timeout}
   * @throws InterruptedException if the waiting thread is interrupted
   */
  public boolean awaitClose(Duration timeout) throws InterruptedException {
    return closed.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /**
   * @return whether the handler closed the call before the capture started (it refused the
   *     request itself, for example a second request message of a unary call)
   */
  public synchronized boolean closedEarly() {
    return closedEarly;
  }

  /** @return the status the handler closed with, or {@code null} before it closed */
  public synchronized @Nullable Status capturedStatus() {
    return status;
  }

  /** @return the message the handler sent, or {@code null} if none */
  public synchronized @Nullable RespT capturedMessage() {
    return message;
  }

  /** @return the trailers the handler closed with, or {@code null} before it closed */
  public synchronized @Nullable Metadata capturedTrailers() {
    return trailers;
  }

  /**
   * Sends the captured answer (headers, message, status and trailers) on the transport's call, as
   * the handler gave them; drops whatever the handler sends later.
   *
   * @throws IllegalStateException if the handler has not closed the call
   */
  public void sendCaptured() {
    Metadata h;
    RespT m;
    Status s;
    Metadata t;
    synchronized (this) {
      if (status == null || trailers == null) {
        throw new IllegalStateException("the handler has not closed the call");
      }
      mode = Mode.DONE;
      h = headers;
      m = message;
      s = status;
      t = trailers;
    }
    if (m != null) {
      delegate().sendHeaders(h != null ? h : new Metadata());
      delegate().sendMessage(m);
    } else if (h != null) {
      delegate().sendHeaders(h);
    }
    delegate().close(s, t);
  }

  /**
   * Stops forwarding and capturing: the interceptor answers on {@link #transportCall()} itself (a
   * replay, a refusal), and whatever the handler sends from now on is dropped.
   *
   * @return the transport's call, to answer on, never {@code null}
   */
  public ServerCall<ReqT, RespT> answerDirectly() {
    synchronized (this) {
      mode = Mode.DONE;
    }
    return delegate();
  }

  /** @return the transport's call, never {@code null} */
  public ServerCall<ReqT, RespT> transportCall() {
    return delegate();
  }

  @Override
  public void sendHeaders(Metadata headers) {
    synchronized (this) {
      if (mode == Mode.CAPTURE) {
        this.headers = headers;
        return;
      }
      if (mode == Mode.DONE) {
        return;
      }
    }
    super.sendHeaders(headers);
  }

  @Override
  public void sendMessage(RespT message) {
    synchronized (this) {
      if (mode == Mode.CAPTURE) {
        if (this.message != null || status != null) {
          throw new IllegalStateException("a unary call answers one message, before it closes");
        }
        this.message = message;
        return;
      }
      if (mode == Mode.DONE) {
        return;
      }
    }
    super.sendMessage(message);
  }

  @Override
  public void close(Status status, Metadata trailers) {
    synchronized (this) {
      if (mode == Mode.CAPTURE) {
        if (this.status == null) {
          this.status = status;
          this.trailers = trailers;
          closed.countDown();
        }
        return;
      }
      if (mode == Mode.DONE) {
        return;
      }
      closedEarly = true;
    }
    super.close(status, trailers);
  }

  @Override
  public boolean isCancelled() {
    synchronized (this) {
      if (mode != Mode.FORWARD) {
        return false;
      }
    }
    return super.isCancelled();
  }
}
