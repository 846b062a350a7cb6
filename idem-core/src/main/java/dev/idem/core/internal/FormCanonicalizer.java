package dev.idem.core.internal;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The canonical form of an {@code application/x-www-form-urlencoded} body, for its fingerprint.
 *
 * <p>The body is split at each {@code &} into fields, and each field at its first {@code =} into
 * a name and a value; in both, {@code +} becomes a space and each {@code %XX} (two hexadecimal
 * digits, either case) the byte it denotes, so the comparison is of the decoded bytes, whatever
 * the charset reads them as. The fields are then sorted by name, byte by byte; the sort is stable,
 * so fields of one name keep their relative order ({@code a=1&b=2&a=3} is {@code a=1&a=3&b=2}, and
 * {@code a=3&b=2&a=1} is another form). The canonical form writes the number of fields, then for
 * each its name, whether it had {@code =}, and its value, each length-prefixed, so a decoded
 * {@code &} or {@code =} inside a value ({@code a=1%26b%3D2}) can never read as a delimiter.
 *
 * <p>What counts as different: any difference in decoded names or values, in the relative order
 * of fields of one name, in their number, and a field without {@code =} ({@code a}) from one with
 * an empty value ({@code a=}). Empty fields ({@code a=1&&b=2}) are kept, as fields with an empty
 * name. A body with a {@code %} not followed by two hexadecimal digits is not canonicalized:
 * {@link #canonicalForm} answers {@code null}, and the caller compares the raw bytes under a tag of
 * their own, so such a body never equals a canonicalized one.
 *
 * <p>Not part of the public API. Stateless and thread-safe.
 */
public final class FormCanonicalizer {

  private FormCanonicalizer() {}

  private record Field(byte[] name, boolean hasValue, byte[] value) {}

  /**
   * @param body the body bytes, never {@code null}
   * @return the canonical form, or {@code null} if the body has invalid percent-encoding
   */
  public static byte @Nullable [] canonicalForm(byte[] body) {
    List<Field> fields = new ArrayList<>();
    int start = 0;
    while (true) {
      int end = indexOf(body, (byte) '&', start, body.length);
      int eq = indexOf(body, (byte) '=', start, end);
      byte[] name = decode(body, start, eq < 0 ? end : eq);
      byte[] value = eq < 0 ? new byte[0] : decode(body, eq + 1, end);
      if (name == null || value == null) {
        return null;
      }
      fields.add(new Field(name, eq >= 0, value));
      if (end == body.length) {
        break;
      }
      start = end + 1;
    }
    fields.sort((x, y) -> Arrays.compareUnsigned(x.name, y.name)); // List.sort is stable
    ByteArrayOutputStream out = new ByteArrayOutputStream(body.length + 16 * fields.size() + 8);
    writeLong(out, fields.size());
    for (Field f : fields) {
      writeLong(out, f.name.length);
      out.writeBytes(f.name);
      out.write(f.hasValue ? 1 : 0);
      writeLong(out, f.value.length);
      out.writeBytes(f.value);
    }
    return out.toByteArray();
  }

  private static int indexOf(byte[] b, byte c, int from, int to) {
    for (int i = from; i < to; i++) {
      if (b[i] == c) {
        return i;
      }
    }
    return c == '&' ? to : -1;
  }

  /** @return the decoded bytes of {@code b[from, to)}, or {@code null} for a bad {@code %} escape */
  private static byte @Nullable [] decode(byte[] b, int from, int to) {
    byte[] out = new byte[to - from];
    int n = 0;
    for (int i = from; i < to; i++) {
      byte c = b[i];
      if (c == '+') {
        out[n++] = ' ';
      } else if (c == '%') {
        if (i + 2 >= to) {
          return null; // a % without two characters after it, in this name or value
        }
        int hi = hex(b[i + 1]);
        int lo = hex(b[i + 2]);
        if (hi < 0 || lo < 0) {
          return null;
        }
        out[n++] = (byte) (hi << 4 | lo);
        i += 2;
      } else {
        out[n++] = c;
      }
    }
    return Arrays.copyOf(out, n);
  }

  private static int hex(byte c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  }

  private static void writeLong(ByteArrayOutputStream out, long v) {
    for (int shift = 56; shift >= 0; shift -= 8) {
      out.write((int) (v >>> shift));
    }
  }
}
