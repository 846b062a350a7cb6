package dev.idem.core.http;

import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * A route's path pattern: an exact path ({@code /notes}), with {@code *} for exactly one non-empty
 * segment ({@code /notes/*}) and a final {@code **} for any number of segments, none included
 * ({@code /notes/**} matches {@code /notes}, {@code /notes/} and {@code /notes/1/tags}). Matching is
 * case-sensitive and works on the decoded, server-normalised path inside the application's context
 * (the servlet filter: servlet path plus path info; the WebFlux filter: the path within the
 * application, decoded). The same patterns for every HTTP integration. Immutable and thread-safe.
 */
public final class PathPattern {

  private final String text;
  private final String[] segments;
  private final boolean prefix;

  private PathPattern(String text, String[] segments, boolean prefix) {
    this.text = text;
    this.segments = segments;
    this.prefix = prefix;
  }

  /**
   * @param pattern the pattern text, never {@code null}
   * @return the compiled pattern
   * @throws NullPointerException if {@code pattern} is {@code null}
   * @throws IllegalArgumentException if it does not start with {@code /}, contains an empty segment
   *     ({@code //}), whitespace, a control character, {@code ?}, {@code #} or a non-ASCII character,
   *     uses {@code *} inside a segment, uses {@code **} anywhere but as the last segment, or
   *     contains a brace ({@code {id}}: a path variable in Spring's or OpenAPI's syntax, which a
   *     pattern would otherwise take literally and never match; write {@code *} for it)
   */
  public static PathPattern compile(String pattern) {
    if (pattern == null) {
      throw new NullPointerException("path pattern must not be null");
    }
    if (pattern.isEmpty() || pattern.charAt(0) != '/') {
      throw new IllegalArgumentException("path pattern must start with '/': " + pattern);
    }
    for (int i = 0; i < pattern.length(); i++) {
      char c = pattern.charAt(i);
      if (c <= 0x20 || c >= 0x7F || c == '?' || c == '#') {
        throw new IllegalArgumentException(String.format(
            "path pattern contains an invalid character U+%04X at index %d (no whitespace, control, non-ASCII, '?' or '#')",
            (int) c, i));
      }
    }
    int open = pattern.indexOf('{');
    int close = pattern.indexOf('}');
    int brace = open < 0 ? close : close < 0 ? open : Math.min(open, close);
    if (brace >= 0) {
      // RFC 3986 has no unencoded braces in a path, so a brace here is a path variable ({id}),
      // which this syntax does not have: refused rather than compared literally, which would
      // leave every real request outside the route (unprotected, or its key optional)
      throw new IllegalArgumentException("path pattern contains '" + pattern.charAt(brace) + "' at index " + brace
          + ": path variables such as {id} are not part of the pattern syntax; use '*' for one segment or a final"
          + " '**' for the rest" + rewritten(pattern) + ": " + pattern);
    }
    if (pattern.contains("//")) {
      throw new IllegalArgumentException("path pattern must not contain an empty segment '//': " + pattern);
    }
    String[] parts = pattern.substring(1).split("/", -1);
    boolean prefix = false;
    for (int i = 0; i < parts.length; i++) {
      String s = parts[i];
      if (s.equals("**")) {
        if (i != parts.length - 1) {
          throw new IllegalArgumentException("'**' may only be the last segment of a path pattern: " + pattern);
        }
        prefix = true;
      } else if (s.indexOf('*') >= 0 && !s.equals("*")) {
        throw new IllegalArgumentException("'*' must be a whole segment of a path pattern: " + pattern);
      }
    }
    String[] fixed = prefix ? Arrays.copyOf(parts, parts.length - 1) : parts;
    return new PathPattern(pattern, fixed, prefix);
  }

  /**
   * @return {@code " (PATTERN)"}: {@code pattern} with a final catch-all variable ({@code {*rest}})
   *     written {@code **} and each plain variable ({@code {id}}, {@code {id:\d+}}) written {@code
   *     *}, when that leaves no brace; else an empty string (a variable whose regular expression
   *     has braces of its own)
   */
  private static String rewritten(String pattern) {
    String s = pattern.replaceAll("/\\{\\*[^/{}]*\\}$", "/**").replaceAll("\\{[^/{}]*\\}", "*");
    return s.indexOf('{') >= 0 || s.indexOf('}') >= 0 ? "" : " (" + s + ")";
  }

  /**
   * @param path a decoded path inside the context, starting with {@code /}; may be {@code null}
   *     (never matches)
   * @return whether the pattern matches the whole path
   */
  public boolean matches(@Nullable String path) {
    if (path == null || path.isEmpty() || path.charAt(0) != '/') {
      return false;
    }
    String[] parts = path.substring(1).split("/", -1);
    if (prefix) {
      // "/notes/**" also matches "/notes" and "/notes/"; "/**" matches everything.
      int n = segments.length;
      if (parts.length < n) {
        return false;
      }
      for (int i = 0; i < n; i++) {
        if (!segmentMatches(segments[i], parts[i])) {
          return false;
        }
      }
      return true;
    }
    if (parts.length != segments.length) {
      return false;
    }
    for (int i = 0; i < parts.length; i++) {
      if (!segmentMatches(segments[i], parts[i])) {
        return false;
      }
    }
    return true;
  }

  private static boolean segmentMatches(String pattern, String part) {
    return pattern.equals("*") ? !part.isEmpty() : pattern.equals(part);
  }

  /** @return the pattern text as given */
  @Override
  public String toString() {
    return text;
  }
}
