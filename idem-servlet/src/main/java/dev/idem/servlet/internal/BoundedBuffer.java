package dev.idem.servlet.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;

/**
 * A byte buffer whose capacity never exceeds its limit (unlike {@link
 * java.io.ByteArrayOutputStream}, which may double past it); callers keep within the limit. Holds
 * a {@link CapturingResponse}'s body. Not thread-safe.
 */
final class BoundedBuffer {
  private final int limit;
  private byte[] buf = new byte[0];
  private int count;

  BoundedBuffer(int limit) {
    this.limit = limit;
  }

  int size() {
    return count;
  }

  void write(int b) {
    ensure(count + 1L);
    buf[count++] = (byte) b;
  }

  void write(byte[] b, int off, int len) {
    ensure((long) count + len);
    System.arraycopy(b, off, buf, count, len);
    count += len;
  }

  private void ensure(long needed) {
    if (needed > limit) {
      throw new IllegalStateException("buffer limit " + limit + " exceeded"); // the caller overflows first
    }
    if (needed > buf.length) {
      long grown = Math.max(needed, Math.max(256L, 2L * buf.length));
      buf = Arrays.copyOf(buf, (int) Math.min(grown, limit));
    }
  }

  void reset() {
    count = 0;
  }

  /** Frees the memory. */
  void release() {
    buf = new byte[0];
    count = 0;
  }

  byte[] toByteArray() {
    return Arrays.copyOf(buf, count);
  }

  void writeTo(OutputStream out) throws IOException {
    if (count > 0) {
      out.write(buf, 0, count);
    }
  }

  /** @return the capacity in bytes, never more than the limit */
  int capacity() {
    return buf.length;
  }
}
