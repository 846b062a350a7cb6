package dev.idem.core.http;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.InvalidIdempotencyKeyException;
import java.util.Enumeration;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Parses the {@code Idempotency-Key} request header field.
 *
 * <p>The draft (draft-ietf-httpapi-idempotency-key-header, section 2.1) makes the field an RFC 8941
 * Item whose value is an {@code sf-string} (RFC 8941 section 3.3.3): {@code DQUOTE *( unescaped /
 * "\" ( DQUOTE / "\" ) ) DQUOTE} with {@code unescaped = %x20-21 / %x23-5B / %x5D-7E}. Many clients
 * (the implementations the draft lists in its section 4) send the key unquoted, so a bare value is
 * accepted too: one or more of {@code %x21-7E} except {@code DQUOTE}, {@code \} and {@code ,}
 * (those would make it ambiguous with the quoted form or with a list of combined field lines).
 * {@code "abc"} and {@code abc} are the same key. Parameters after a quoted string are not
 * accepted. Used by every HTTP integration of Idem (the servlet and WebFlux filters), so that a
 * key is read the same way on each. Stateless and thread-safe.
 */
public final class KeyHeader {

  private KeyHeader() {}

  /** The header is absent, present once and well-formed, or malformed. */
  public static final class Result {
    private final @Nullable IdempotencyKey key;
    private final @Nullable String problem;
    private final @Nullable String fieldValue;

    private Result(@Nullable IdempotencyKey key, @Nullable String problem, @Nullable String fieldValue) {
      this.key = key;
      this.problem = problem;
      this.fieldValue = fieldValue;
    }

    /** @return the key, or {@code null} when the field is absent or malformed */
    public @Nullable IdempotencyKey key() {
      return key;
    }

    /**
     * @return the field value as the client sent it (without surrounding whitespace, RFC 9110
     *     section 5.5), quotes and escapes included, when it spells a well-formed key; {@code null}
     *     when the field is absent or malformed. Printable US-ASCII only, so safe to send back.
     */
    public @Nullable String fieldValue() {
      return fieldValue;
    }

    /** @return why the field is malformed (safe to show to the client), or {@code null} */
    public @Nullable String problem() {
      return problem;
    }

    /** @return {@code true} when the request has no {@code Idempotency-Key} field */
    public boolean absent() {
      return key == null && problem == null;
    }
  }

  private static final Result ABSENT = new Result(null, null, null);

  /**
   * @param fieldValues every value of the field, as the container reports them (name matched
   *     case-insensitively); may be {@code null} (treated as absent)
   * @return absent, a key, or a problem; never {@code null}
   */
  public static Result parse(@Nullable Enumeration<String> fieldValues) {
    if (fieldValues == null || !fieldValues.hasMoreElements()) {
      return ABSENT;
    }
    String first = fieldValues.nextElement();
    if (fieldValues.hasMoreElements()) {
      return malformed("the request carries more than one Idempotency-Key field (draft section 2.1 allows one)");
    }
    return parse(first);
  }

  /**
   * @param fieldValues every value of the field, as the server reports them (name matched
   *     case-insensitively, one element per field line); may be {@code null} or empty (absent)
   * @return absent, a key, or a problem (also when the field is sent more than once); never {@code null}
   */
  public static Result parseValues(@Nullable List<String> fieldValues) {
    if (fieldValues == null || fieldValues.isEmpty()) {
      return ABSENT;
    }
    if (fieldValues.size() > 1) {
      return malformed("the request carries more than one Idempotency-Key field (draft section 2.1 allows one)");
    }
    return parse(fieldValues.get(0));
  }

  /**
   * @param fieldValue one field value, never {@code null}
   * @return a key or a problem; never {@code null} and never absent
   */
  public static Result parse(String fieldValue) {
    String v = trimOws(fieldValue == null ? "" : fieldValue);
    String decoded;
    if (v.isEmpty()) {
      return malformed("the Idempotency-Key field is empty; send a key of 1 to "
          + IdempotencyKey.DEFAULT_MAX_LENGTH + " printable US-ASCII characters");
    }
    if (v.charAt(0) == '"') {
      StringBuilder out = new StringBuilder(v.length());
      int i = 1;
      boolean closed = false;
      for (; i < v.length(); i++) {
        char c = v.charAt(i);
        if (c == '\\') {
          if (i + 1 >= v.length()) {
            return malformed("bad quoting: the quoted key ends with a lone backslash");
          }
          char next = v.charAt(++i);
          if (next != '"' && next != '\\') {
            return malformed("bad quoting: a backslash may only escape '\"' or '\\' (RFC 8941 section 3.3.3), found it before "
                + describe(next) + " at index " + i);
          }
          out.append(next);
        } else if (c == '"') {
          closed = true;
          break;
        } else if (c < 0x20 || c > 0x7E) {
          return malformed(characterProblem(c, i));
        } else {
          out.append(c);
        }
      }
      if (!closed) {
        return malformed("bad quoting: the quoted key has no closing '\"'");
      }
      if (i + 1 < v.length()) {
        return malformed("bad quoting: unexpected characters after the closing '\"' at index " + (i + 1)
            + " (the field must be a single sf-string, without parameters)");
      }
      decoded = out.toString();
    } else {
      for (int i = 0; i < v.length(); i++) {
        char c = v.charAt(i);
        if (c < 0x20 || c > 0x7E) {
          return malformed(characterProblem(c, i));
        }
        if (c == '"' || c == '\\' || c == ',' || c == ' ') {
          return malformed("bad quoting: an unquoted key must not contain " + describe(c) + " (index " + i
              + "); send it as a quoted string (RFC 8941 section 3.3.3)");
        }
      }
      decoded = v;
    }
    try {
      return new Result(IdempotencyKey.of(decoded), null, v);
    } catch (InvalidIdempotencyKeyException e) {
      // the exception always names the rule broken; a blank problem would read as an absent field
      return malformed(Objects.requireNonNullElse(e.getMessage(), "the key breaks a rule of IdempotencyKey"));
    }
  }

  private static String characterProblem(char c, int index) {
    return String.format(
        "the Idempotency-Key field must be printable US-ASCII: %s character U+%04X at index %d",
        c < 0x20 || c == 0x7F ? "control" : "non-ASCII", (int) c, index);
  }

  private static String describe(char c) {
    return c == ' ' ? "a space" : c == ',' ? "a comma" : c < 0x20 || c > 0x7E
        ? String.format("U+%04X", (int) c) : "'" + c + "'";
  }

  private static Result malformed(String problem) {
    return new Result(null, problem, null);
  }

  private static String trimOws(String s) {
    int start = 0;
    int end = s.length();
    while (start < end && (s.charAt(start) == ' ' || s.charAt(start) == '\t')) {
      start++;
    }
    while (end > start && (s.charAt(end - 1) == ' ' || s.charAt(end - 1) == '\t')) {
      end--;
    }
    return s.substring(start, end);
  }
}
