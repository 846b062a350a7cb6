package dev.idem.webflux;

import java.io.ByteArrayOutputStream;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The handler's response while it runs: its status and header fields go to the real response
 * (which is not committed), its body is held in memory, up to the limit, instead of being written,
 * so that nothing reaches the client before the engine has stored or released the key. A body that
 * grows past the limit stops the holding: what was held and the rest stream to the client from
 * then on, and only the body's length is kept ({@link #overflowed()}).
 *
 * <p>{@link #writeWith} and {@link #writeAndFlushWith} consume the handler's buffers and release
 * them; {@link #setComplete()} commits nothing. One exchange at a time, as a response is: the
 * holding state is touched by the subscription of the body only.
 */
final class CapturingResponse extends ServerHttpResponseDecorator {

  private final int max;
  private final ByteArrayOutputStream held = new ByteArrayOutputStream();
  private final AtomicBoolean overflowed = new AtomicBoolean();
  private long length;
  /** The buffer that took the body past the limit: the first of what streams. */
  private @Nullable DataBuffer trigger;

  /**
   * @param delegate the exchange's real response, not committed
   * @param max the most body bytes held, at least 0
   */
  CapturingResponse(ServerHttpResponse delegate, int max) {
    super(delegate);
    this.max = max;
  }

  @Override
  public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
    // Two windows at most: the buffers up to the limit (held), and from the one that passes it on
    // (streamed after what was held, through the real response's one write).
    return Flux.<DataBuffer>from(body)
        .windowUntil(this::passesLimit, true)
        .concatMap(window -> window.switchOnFirst((first, buffers) -> first.hasValue() && first.get() == trigger
            ? streamThrough(buffers)
            : buffers.doOnNext(this::hold).then()))
        .then();
  }

  @Override
  public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> body) {
    // Held whole anyway until the key is settled: the flushes have nothing to flush.
    return writeWith(Flux.from(body).concatMap(Flux::from));
  }

  /** Nothing is committed until the filter writes the answer the engine decided on. */
  @Override
  public Mono<Void> setComplete() {
    return Mono.empty();
  }

  /** @return whether the body passed the limit, so it streamed to the client and is not held */
  boolean overflowed() {
    return overflowed.get();
  }

  /** @return the body's length in bytes so far */
  long bodyLength() {
    return length;
  }

  /** @return a copy of the held body; only meaningful when not {@link #overflowed()} */
  byte[] body() {
    return held.toByteArray();
  }

  /** Counts {@code buffer}; true once, for the buffer that takes the body past the limit, which it remembers. */
  private boolean passesLimit(DataBuffer buffer) {
    length += buffer.readableByteCount();
    if (length > max && overflowed.compareAndSet(false, true)) {
      trigger = buffer;
      return true;
    }
    return false;
  }

  private void hold(DataBuffer buffer) {
    try {
      byte[] bytes = new byte[buffer.readableByteCount()];
      buffer.read(bytes);
      held.write(bytes, 0, bytes.length);
    } finally {
      DataBufferUtils.release(buffer);
    }
  }

  /** What was held, then {@code rest}, through the real response: status and header fields go with it. */
  private Mono<Void> streamThrough(Flux<DataBuffer> rest) {
    byte[] before = held.toByteArray();
    held.reset();
    Flux<DataBuffer> all = before.length == 0 ? rest : Flux.concat(Mono.fromSupplier(() -> bufferFactory().wrap(before)), rest);
    return getDelegate().writeWith(all);
  }
}
