package dev.idem.core.internal;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * The input side of {@link JsonCanonicalizer}: a strict, iterative RFC 8259 parser over UTF-8 bytes
 * that validates every byte and hands each token, already decoded, to a {@link
 * CanonicalJsonWriter}; numbers go to {@link JsonNumbers}. Errors are {@link
 * dev.idem.core.InvalidPayloadException}s whose message gives the byte offset where the problem was
 * detected.
 *
 * <p>Not part of the public API. One instance parses one input on one thread; not thread-safe.
 */
final class JsonParser {

  private final byte[] in;
  private final int len;
  private final CanonicalJsonWriter out;
  private int pos;

  /** Per open container: true for an object. */
  private boolean[] isObject = new boolean[16];

  private int depth;

  JsonParser(byte[] in, CanonicalJsonWriter out) {
    this.in = in;
    this.len = in.length;
    this.out = out;
  }

  /** Parses the whole input as one JSON text, writing it to the writer. */
  void run() {
    if (len >= 3 && in[0] == (byte) 0xEF && in[1] == (byte) 0xBB && in[2] == (byte) 0xBF) {
      pos = 3; // RFC 8259 §8.1: a parser MAY ignore a byte order mark
    }
    skipWhitespace();
    if (pos >= len) {
      throw error(pos, "expected a JSON value but found end of input");
    }
    value:
    while (true) {
      // ---- parse one value at pos (whitespace already skipped)
      if (pos >= len) {
        throw error(pos, "unexpected end of input, expected a value");
      }
      byte b = in[pos];
      switch (b) {
        case '{':
          push(true);
          out.openObject();
          pos++;
          skipWhitespace();
          if (pos < len && in[pos] == '}') {
            pos++;
            out.closeObject();
            depth--;
            break; // value complete
          }
          member();
          continue value;
        case '[':
          push(false);
          out.openArray();
          pos++;
          skipWhitespace();
          if (pos < len && in[pos] == ']') {
            pos++;
            out.closeArray();
            depth--;
            break;
          }
          continue value;
        case '"':
          string(false);
          break;
        case 't':
          literal("true");
          break;
        case 'f':
          literal("false");
          break;
        case 'n':
          literal("null");
          break;
        default:
          if (b == '-' || (b >= '0' && b <= '9')) {
            pos = JsonNumbers.canonicalize(in, pos, len, out);
          } else if (b == 'N' || b == 'I') {
            throw error(pos, "NaN and Infinity are not valid JSON numbers");
          } else {
            throw error(pos, "expected a value but found " + describe(in, pos));
          }
      }
      // ---- a value is complete: close containers or move to the next element
      while (true) {
        skipWhitespace();
        if (depth == 0) {
          if (pos < len) {
            throw error(pos, "unexpected data after the JSON value: " + describe(in, pos));
          }
          return;
        }
        if (isObject[depth - 1]) {
          out.endMemberValue();
          if (pos >= len) {
            throw error(pos, "unexpected end of input, expected ',' or '}'");
          }
          byte c = in[pos];
          if (c == ',') {
            pos++;
            out.write(',');
            skipWhitespace();
            member();
            continue value;
          } else if (c == '}') {
            pos++;
            out.closeObject();
            depth--;
          } else {
            throw error(pos, "expected ',' or '}' but found " + describe(in, pos));
          }
        } else {
          if (pos >= len) {
            throw error(pos, "unexpected end of input, expected ',' or ']'");
          }
          byte c = in[pos];
          if (c == ',') {
            pos++;
            out.write(',');
            skipWhitespace();
            continue value;
          } else if (c == ']') {
            pos++;
            out.closeArray();
            depth--;
          } else {
            throw error(pos, "expected ',' or ']' but found " + describe(in, pos));
          }
        }
      }
    }
  }

  private void push(boolean object) {
    if (depth >= JsonCanonicalizer.MAX_DEPTH) {
      throw error(pos, "nesting deeper than " + JsonCanonicalizer.MAX_DEPTH + " levels");
    }
    if (depth == isObject.length) {
      isObject = Arrays.copyOf(isObject, depth * 2);
    }
    isObject[depth++] = object;
  }

  /** At a member name (whitespace skipped): parses {@code "name" :} and records the member. */
  private void member() {
    if (pos >= len) {
      throw error(pos, "unexpected end of input, expected a member name");
    }
    if (in[pos] != '"') {
      throw error(pos, "expected a member name string but found " + describe(in, pos));
    }
    out.beginMember(pos);
    out.endMemberName(string(true));
    skipWhitespace();
    if (pos >= len) {
      throw error(pos, "unexpected end of input, expected ':'");
    }
    if (in[pos] != ':') {
      throw error(pos, "expected ':' but found " + describe(in, pos));
    }
    pos++;
    out.write(':');
    skipWhitespace();
  }

  private void literal(String word) {
    int n = word.length();
    if (pos + n > len) {
      throw error(pos, "invalid literal, expected '" + word + "'");
    }
    for (int i = 0; i < n; i++) {
      if (in[pos + i] != word.charAt(i)) {
        throw error(pos, "invalid literal, expected '" + word + "'");
      }
    }
    out.write(in, pos, n);
    pos += n;
  }

  private void skipWhitespace() {
    while (pos < len) {
      byte b = in[pos];
      if (b == ' ' || b == '\n' || b == '\r' || b == '\t') {
        pos++;
      } else {
        return;
      }
    }
  }

  // ---- strings ---------------------------------------------------------------------------------

  /**
   * At an opening quote: validates the string and writes its canonical form (RFC 8785 §3.2.2.2).
   * The characters are kept as they are: no Unicode normalisation, since U+00E9 and U+0065 U+0301
   * (both shown as é) are different strings to JSON (RFC 8259 §8.3).
   *
   * @param wantValue whether the caller needs the decoded value (a member name)
   * @return for a member name with escapes or non-ASCII characters, the decoded value; otherwise
   *     {@code null}
   */
  private @Nullable String string(boolean wantValue) {
    final byte[] in = this.in;
    final int start = pos;
    int p = pos + 1;
    out.write('"');
    boolean plain = true; // ASCII only, no escapes
    while (true) {
      p = out.copyPlain(in, p, len);
      if (p >= len) {
        throw error(p, "unterminated string starting at byte " + start);
      }
      int b = in[p];
      if (b == '"') {
        p++;
        break;
      }
      if (b == '\\') {
        plain = false;
        p = escape(p);
        continue;
      }
      if (b >= 0) {
        throw error(p, "unescaped control character 0x" + HexFormat.of().toHexDigits((byte) b) + " in string");
      }
      plain = false;
      int n = utf8Length(p);
      out.write(in, p, n);
      p += n;
    }
    out.write('"');
    pos = p;
    if (!wantValue || plain) {
      return null; // a plain member name is compared as bytes in the output
    }
    return decode(start + 1, p - 1);
  }

  /** Decodes the escape at {@code p}, writes its character canonically, returns the next offset. */
  private int escape(int p) {
    if (p + 1 >= len) {
      throw error(p, "unterminated escape sequence");
    }
    byte e = in[p + 1];
    int cp;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out.stringChar(e);
        return p + 2;
      case 'b':
        out.stringChar('\b');
        return p + 2;
      case 'f':
        out.stringChar('\f');
        return p + 2;
      case 'n':
        out.stringChar('\n');
        return p + 2;
      case 'r':
        out.stringChar('\r');
        return p + 2;
      case 't':
        out.stringChar('\t');
        return p + 2;
      case 'u':
        break;
      default:
        throw error(p, "invalid escape sequence " + describe(in, p + 1) + " after '\\'");
    }
    cp = hex4(p);
    int next = p + 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (next + 1 < len && in[next] == '\\' && in[next + 1] == 'u') {
        int lo = hex4(next);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          cp = Character.toCodePoint((char) cp, (char) lo);
          next += 6;
        } else {
          throw error(p, String.format("lone surrogate \\u%04x", cp));
        }
      } else {
        throw error(p, String.format("lone surrogate \\u%04x", cp));
      }
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      throw error(p, String.format("lone surrogate \\u%04x", cp));
    }
    out.stringChar(cp);
    return next;
  }

  /** Reads the four hex digits of the {@code \}{@code u} escape starting at {@code p}. */
  private int hex4(int p) {
    if (p + 6 > len) {
      throw error(p, "truncated \\u escape");
    }
    int v = 0;
    for (int i = p + 2; i < p + 6; i++) {
      int c = in[i];
      int d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        throw error(i, "invalid hex digit " + describe(in, i) + " in \\u escape");
      }
      v = (v << 4) | d;
    }
    return v;
  }

  /** Validates the multi-byte UTF-8 sequence at {@code p} ({@link Utf8}) and returns its length. */
  private int utf8Length(int p) {
    int n = Utf8.sequenceLength(in, p, len);
    if (n < 0) {
      throw error(p, Utf8.describe(n, in[p]));
    }
    return n;
  }

  /** Decodes an already validated string body (between the quotes) into a Java string. */
  private String decode(int from, int to) {
    StringBuilder sb = new StringBuilder(to - from);
    int p = from;
    while (p < to) {
      int runStart = p;
      while (p < to && in[p] != '\\') {
        p++;
      }
      if (p > runStart) {
        sb.append(new String(in, runStart, p - runStart, StandardCharsets.UTF_8));
      }
      if (p >= to) {
        break;
      }
      byte e = in[p + 1];
      switch (e) {
        case 'b':
          sb.append('\b');
          break;
        case 'f':
          sb.append('\f');
          break;
        case 'n':
          sb.append('\n');
          break;
        case 'r':
          sb.append('\r');
          break;
        case 't':
          sb.append('\t');
          break;
        case 'u':
          sb.append((char) hex4(p));
          p += 4;
          break;
        default: // '"', '\\', '/'
          sb.append((char) e);
      }
      p += 2;
    }
    return sb.toString();
  }

  private static RuntimeException error(int offset, String problem) {
    return JsonCanonicalizer.invalid(offset, problem);
  }

  /** Names the byte at {@code p} for an error message: {@code 'x'}, {@code byte 0x0a}, or end. */
  static String describe(byte[] in, int p) {
    if (p >= in.length) {
      return "end of input";
    }
    int b = in[p] & 0xFF;
    if (b > 0x20 && b < 0x7F) {
      return "'" + (char) b + "'";
    }
    return "byte 0x" + HexFormat.of().toHexDigits((byte) b);
  }
}
