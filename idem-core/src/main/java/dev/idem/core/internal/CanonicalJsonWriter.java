package dev.idem.core.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The output side of {@link JsonCanonicalizer}: a growable UTF-8 buffer that receives the canonical
 * tokens from {@link JsonParser} and {@link JsonNumbers}, escapes string characters as RFC 8785
 * §3.2.2.2 prescribes, and sorts the members of each object by the UTF-16 code units of their names
 * (§3.2.3), rejecting duplicate names (§3.1).
 *
 * <p>Not part of the public API. One instance serves one canonicalization on one thread; not
 * thread-safe.
 *
 * <p>Capacity invariant: the buffer always has room for the rest of the input plus {@value #SLACK}
 * bytes. Structure, literals and strings never produce more bytes than they consume, so only
 * numbers need to {@link #reserve(int)} after they are written.
 */
final class CanonicalJsonWriter {

  /** Spare bytes kept beyond the rest of the input; a number expands by at most 21 bytes. */
  static final int SLACK = 32;

  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

  private static final byte[] NO_BYTES = new byte[0];
  private static final int[] NO_INTS = new int[0];

  private static final VarHandle LONG_BE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  private byte[] out;
  private int pos;

  /** Per open object: index of its first member record. */
  private int[] objectBase;

  private int objects;

  // Member records of all open objects, stack-allocated: an object owns [objectBase, mTop).
  // mKey is null for a name of printable ASCII without escapes: its canonical bytes in out,
  // which order like its UTF-16 code units, are compared instead.
  private @Nullable String[] mKey;
  private int[] mKeyOffset;
  private int[] mStart;
  private int[] mEnd;
  private int[] mNameEnd;

  /** For a plain name: its first 8 bytes, big-endian, zero-padded. */
  private long[] mPrefix;

  private int mTop;
  private byte[] scratch = NO_BYTES;
  private int[] order = NO_INTS;

  /**
   * @param inputLength the length of the whole input, which bounds the output but for numbers
   */
  CanonicalJsonWriter(int inputLength) {
    this.out = new byte[inputLength + 2 * SLACK];
    // a member takes at least 6 input bytes ("":0,); a small body gets small stacks
    int members = Math.max(4, Math.min(16, inputLength / 16));
    objectBase = new int[Math.max(4, Math.min(16, inputLength / 8))];
    mKey = new String[members];
    mKeyOffset = new int[members];
    mStart = new int[members];
    mEnd = new int[members];
    mNameEnd = new int[members];
    mPrefix = new long[members];
  }

  /** @return a new array holding everything written */
  byte[] toByteArray() {
    return Arrays.copyOf(out, pos);
  }

  /** @return the buffer, whose first {@link #length()} bytes are everything written */
  byte[] buffer() {
    return out;
  }

  /** @return how many bytes were written */
  int length() {
    return pos;
  }

  /** Restores the capacity invariant when {@code remainingInput} input bytes are left. */
  void reserve(int remainingInput) {
    int need = pos + remainingInput + SLACK;
    if (need > out.length) {
      out = Arrays.copyOf(out, Math.max(need, out.length + (out.length >> 1)));
    }
  }

  // ---- raw output ------------------------------------------------------------------------------

  void write(int b) {
    out[pos++] = (byte) b;
  }

  void write(byte[] src, int from, int n) {
    System.arraycopy(src, from, out, pos, n);
    pos += n;
  }

  /**
   * Copies the string content bytes from {@code p} on that stand for themselves ({@code
   * CanonicalJsonCheck.PLAIN}), as many as there are.
   *
   * @return the offset of the first byte not copied, or {@code limit}
   */
  int copyPlain(byte[] in, int p, int limit) {
    int end = CanonicalJsonCheck.copyPlain(in, p, limit, out, pos);
    pos += end - p;
    return end;
  }

  void repeat(int b, long n) {
    for (long i = 0; i < n; i++) {
      out[pos++] = (byte) b;
    }
  }

  /** Writes a non-negative number in decimal. */
  void decimal(long value) {
    if (value >= 10) {
      decimal(value / 10);
    }
    out[pos++] = (byte) ('0' + value % 10);
  }

  // ---- strings ---------------------------------------------------------------------------------

  /**
   * Writes one character of a string's content, given as its code point, in canonical form (RFC
   * 8785 §3.2.2.2): {@code \"}, {@code \\}, {@code \b}, {@code \f}, {@code \n}, {@code \r}, {@code
   * \t} and {@code \}{@code u00xx} (lowercase hex) for the other controls below U+0020; everything
   * else as literal UTF-8.
   *
   * @param cp a Unicode scalar value (no surrogates)
   */
  void stringChar(int cp) {
    final byte[] out = this.out;
    int o = pos;
    if (cp < 0x80) {
      if (cp < 0x20) {
        out[o++] = '\\';
        switch (cp) {
          case '\b':
            out[o++] = 'b';
            break;
          case '\f':
            out[o++] = 'f';
            break;
          case '\n':
            out[o++] = 'n';
            break;
          case '\r':
            out[o++] = 'r';
            break;
          case '\t':
            out[o++] = 't';
            break;
          default:
            out[o++] = 'u';
            out[o++] = '0';
            out[o++] = '0';
            out[o++] = HEX[cp >> 4];
            out[o++] = HEX[cp & 0xF];
        }
      } else if (cp == '"' || cp == '\\') {
        out[o++] = '\\';
        out[o++] = (byte) cp;
      } else {
        out[o++] = (byte) cp;
      }
    } else if (cp < 0x800) {
      out[o++] = (byte) (0xC0 | (cp >> 6));
      out[o++] = (byte) (0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out[o++] = (byte) (0xE0 | (cp >> 12));
      out[o++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
      out[o++] = (byte) (0x80 | (cp & 0x3F));
    } else {
      out[o++] = (byte) (0xF0 | (cp >> 18));
      out[o++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
      out[o++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
      out[o++] = (byte) (0x80 | (cp & 0x3F));
    }
    pos = o;
  }

  // ---- containers ------------------------------------------------------------------------------

  void openArray() {
    out[pos++] = '[';
  }

  void closeArray() {
    out[pos++] = ']';
  }

  void openObject() {
    if (objects == objectBase.length) {
      objectBase = Arrays.copyOf(objectBase, objects * 2);
    }
    objectBase[objects++] = mTop;
    out[pos++] = '{';
  }

  /** Sorts the innermost object's members, rejects duplicate names, and closes it. */
  void closeObject() {
    sortMembers();
    mTop = objectBase[--objects];
    out[pos++] = '}';
  }

  /** Before a member's name string. */
  void beginMember(int nameOffset) {
    if (mTop == mKey.length) {
      int n = mTop * 2;
      mKey = Arrays.copyOf(mKey, n);
      mKeyOffset = Arrays.copyOf(mKeyOffset, n);
      mStart = Arrays.copyOf(mStart, n);
      mEnd = Arrays.copyOf(mEnd, n);
      mNameEnd = Arrays.copyOf(mNameEnd, n);
      mPrefix = Arrays.copyOf(mPrefix, n);
    }
    int m = mTop++;
    mKeyOffset[m] = nameOffset;
    mStart[m] = pos;
  }

  /**
   * After a member's name string, before its {@code :}.
   *
   * @param decoded the name's value when it has escapes or non-ASCII characters; {@code null} when
   *     its canonical bytes are printable ASCII and compare as they are
   */
  void endMemberName(@Nullable String decoded) {
    int m = mTop - 1;
    mKey[m] = decoded;
    mNameEnd[m] = pos;
    if (decoded == null) {
      // out always has SLACK spare bytes, so reading 8 from the name's start stays in bounds
      int nameLen = pos - mStart[m] - 2;
      long prefix = (long) LONG_BE.get(out, mStart[m] + 1);
      mPrefix[m] =
          nameLen >= 8 ? prefix : nameLen == 0 ? 0 : prefix & (-1L << ((8 - nameLen) << 3));
    }
  }

  /** After a member's value. */
  void endMemberValue() {
    mEnd[mTop - 1] = pos;
  }

  /** Sorts the members of the innermost object (RFC 8785 §3.2.3) and rejects duplicates. */
  private void sortMembers() {
    int base = objectBase[objects - 1];
    int n = mTop - base;
    if (n < 2) {
      return;
    }
    boolean sorted = true;
    for (int i = base + 1; i < mTop; i++) {
      int c = compareNames(i - 1, i);
      if (c == 0) {
        throw duplicate(i);
      }
      if (c > 0) {
        sorted = false;
        break;
      }
    }
    if (sorted) {
      return;
    }
    if (order.length < n) {
      order = new int[Math.max(n, 2 * order.length)];
    }
    int[] order = this.order;
    for (int i = 0; i < n; i++) {
      order[i] = base + i;
    }
    if (n <= 16) {
      for (int i = 1; i < n; i++) {
        int x = order[i];
        int j = i - 1;
        while (j >= 0 && compareNames(order[j], x) > 0) {
          order[j + 1] = order[j];
          j--;
        }
        order[j + 1] = x;
      }
    } else {
      Integer[] boxed = new Integer[n];
      for (int i = 0; i < n; i++) {
        boxed[i] = order[i];
      }
      Arrays.sort(boxed, this::compareNames);
      for (int i = 0; i < n; i++) {
        order[i] = boxed[i];
      }
    }
    for (int i = 1; i < n; i++) {
      if (compareNames(order[i - 1], order[i]) == 0) {
        throw duplicate(Math.max(order[i - 1], order[i]));
      }
    }
    int regionStart = mStart[base];
    int regionLen = pos - regionStart;
    if (scratch.length < regionLen) {
      scratch = new byte[Math.max(regionLen, 2 * scratch.length)];
    }
    byte[] copy = scratch;
    System.arraycopy(out, regionStart, copy, 0, regionLen);
    int w = regionStart;
    for (int i = 0; i < n; i++) {
      int m = order[i];
      if (i > 0) {
        out[w++] = ',';
      }
      int segLen = mEnd[m] - mStart[m];
      System.arraycopy(copy, mStart[m] - regionStart, out, w, segLen);
      w += segLen;
    }
    // w == pos: the same bytes, reordered
  }

  /**
   * Orders two member names by their UTF-16 code units (RFC 8785 §3.2.3). Names of printable ASCII
   * compare as their canonical bytes, which order the same way.
   */
  private int compareNames(int a, int b) {
    if (mKey[a] == null && mKey[b] == null) {
      long pa = mPrefix[a];
      long pb = mPrefix[b];
      if (pa != pb) {
        return pa < pb ? -1 : 1; // bytes below 0x80: signed order is byte order
      }
      // equal first 8 bytes (a name shorter than 8 pads with 0, which no plain byte is)
      int fromA = mStart[a] + 1;
      int fromB = mStart[b] + 1;
      int lenA = mNameEnd[a] - 1 - fromA;
      int lenB = mNameEnd[b] - 1 - fromB;
      int common = Math.min(lenA, lenB);
      byte[] out = this.out;
      for (int i = 8; i < common; i++) {
        int d = out[fromA + i] - out[fromB + i];
        if (d != 0) {
          return d;
        }
      }
      return lenA - lenB;
    }
    return name(a).compareTo(name(b)); // String.compareTo orders by UTF-16 code units
  }

  private String name(int m) {
    String s = mKey[m];
    if (s == null) {
      s = new String(out, mStart[m] + 1, mNameEnd[m] - mStart[m] - 2, StandardCharsets.ISO_8859_1);
      mKey[m] = s;
    }
    return s;
  }

  private RuntimeException duplicate(int member) {
    return JsonCanonicalizer.invalid(
        mKeyOffset[member], "duplicate member name " + quoteForMessage(name(member)));
  }

  private static String quoteForMessage(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    int max = Math.min(s.length(), 64);
    for (int i = 0; i < max; i++) {
      char ch = s.charAt(i);
      if (ch < 0x20 || ch == '"' || ch == '\\' || ch > 0x7E) {
        sb.append(String.format("\\u%04x", (int) ch));
      } else {
        sb.append(ch);
      }
    }
    if (s.length() > max) {
      sb.append("...");
    }
    return sb.append('"').toString();
  }
}
