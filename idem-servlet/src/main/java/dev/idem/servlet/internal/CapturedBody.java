package dev.idem.servlet.internal;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A {@link CapturingResponse}'s body: in memory up to the limit, then the container's output
 * stream. Flushing it does not commit anything while it is in memory; closing it never closes the
 * container's stream. With the {@link Stream} and {@link Writer} the handler writes it through.
 * One instance serves one request on one thread; not thread-safe.
 */
final class CapturedBody extends OutputStream {

  /** Where the body goes when it passes the limit. */
  interface Overflow {
    /**
     * Sends the response's head to the container's response.
     *
     * @return the container's output stream, for the bytes held so far and the rest of the body
     * @throws IOException if writing to the container's response fails
     */
    OutputStream open() throws IOException;
  }

  final BoundedBuffer bytes;
  private final int maxBytes;
  private final Overflow overflow;
  /** Set by sendError and sendRedirect: the body is final, later writes are dropped. */
  boolean sealed;
  /** Set while a reset drains the encoder: what it holds is dropped. */
  boolean discarding;
  /** Body bytes accepted since the last reset, held or sent. */
  long written;
  /** The container's output stream once the body overflowed; {@code null} while capturing. */
  private @Nullable OutputStream direct;

  CapturedBody(int maxBytes, Overflow overflow) {
    this.maxBytes = maxBytes;
    this.bytes = new BoundedBuffer(maxBytes);
    this.overflow = overflow;
  }

  /** @return whether the body passed the limit and goes to the container's output stream */
  boolean overflowed() {
    return direct != null;
  }

  /** Drops what is held; only before an overflow. */
  void discard() {
    bytes.reset();
    written = 0;
  }

  @Override
  public void write(int b) throws IOException {
    if (sealed || discarding) {
      return;
    }
    if (direct == null && bytes.size() >= maxBytes) {
      overflow();
    }
    if (direct != null) {
      direct.write(b);
    } else {
      bytes.write(b);
    }
    written++;
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    Objects.checkFromIndexSize(off, len, b.length);
    if (sealed || discarding || len == 0) {
      return;
    }
    if (direct == null && len > maxBytes - bytes.size()) {
      overflow();
    }
    if (direct != null) {
      direct.write(b, off, len);
    } else {
      bytes.write(b, off, len);
    }
    written += len;
  }

  @Override
  public void flush() throws IOException {
    if (direct != null) {
      direct.flush();
    }
  }

  /**
   * The body passes the limit: the head and what is held go to the container's response, the
   * buffer is dropped, and everything after goes straight through.
   */
  private void overflow() throws IOException {
    OutputStream out = overflow.open(); // may throw: then nothing has reached the container's stream
    bytes.writeTo(out);
    bytes.release();
    direct = out;
  }

  /** The response's output stream: writes the body; a flush or a close commits the response. */
  static final class Stream extends ServletOutputStream {
    private final CapturedBody body;
    private final Runnable commit;
    private boolean closed;

    /**
     * @param body what the stream writes
     * @param commit commits the response
     */
    Stream(CapturedBody body, Runnable commit) {
      this.body = body;
      this.commit = commit;
    }

    @Override
    public void write(int b) throws IOException {
      check();
      body.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      check();
      body.write(b, off, len);
    }

    private void check() throws IOException {
      if (closed) {
        throw new IOException("the response output stream is closed");
      }
    }

    @Override
    public void flush() throws IOException {
      commit.run();
      body.flush();
    }

    @Override
    public void close() throws IOException {
      closed = true;
      commit.run();
      body.flush(); // the container's stream stays open: the filter and the container finish it
    }

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public void setWriteListener(WriteListener writeListener) {
      throw new IllegalStateException(
          "non-blocking writes need asynchronous processing, which the idempotency filter does not support");
    }
  }

  /** The response's writer: encodes into the body; a flush or a close commits the response. */
  static final class Writer extends PrintWriter {
    private final Runnable commit;
    private final Runnable closed;

    /**
     * @param out the encoder into the body
     * @param commit commits the response
     * @param closed tells the response that the encoder is drained and closed
     */
    Writer(OutputStreamWriter out, Runnable commit, Runnable closed) {
      super(out, false);
      this.commit = commit;
      this.closed = closed;
    }

    @Override
    public void flush() {
      super.flush();
      commit.run();
    }

    @Override
    public void close() {
      super.flush();
      commit.run();
      super.close();
      closed.run(); // drained above and closed now
    }
  }
}
