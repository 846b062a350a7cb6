package dev.idem.core.internal;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * A parsed {@code Content-Type} value (RFC 9110 §8.3.1) in the normal form that the request
 * fingerprint covers: two values that mean the same media type have the same {@link #canonical()}
 * text, and two that may mean different things do not.
 *
 * <ul>
 *   <li>type and subtype are lower-cased (they are case-insensitive, §8.3.1);
 *   <li>parameter names are lower-cased (case-insensitive, §5.6.6) and the parameters sorted by
 *       name (their order carries no meaning);
 *   <li>a value sent as a quoted-string is unquoted (a token and the equal quoted-string are the
 *       same value, §5.6.6) and written back as a token when it is one, else quoted with {@code \"}
 *       and {@code \\} escaped;
 *   <li>{@code charset} values are lower-cased (charset names are case-insensitive, §8.3.2); every
 *       other value keeps its case, as only the media type's own definition could say otherwise;
 *   <li>for JSON ({@code application/json}, {@code +json} suffixes, RFC 6839 §3.1), {@code
 *       charset=utf-8} is dropped: RFC 8259 §8.1 makes UTF-8 the only encoding, and §11 says a
 *       charset parameter has no effect on compliant recipients. Any other charset is kept, as it
 *       would make some recipients decode the same bytes differently.
 * </ul>
 *
 * No default is assumed for other types ({@code text/plain} and {@code text/plain;
 * charset=us-ascii} stay different), and a value that does not parse, or names a parameter twice,
 * has no normal form ({@link #parse} returns {@code null}); the fingerprint then covers the field
 * value exactly as sent.
 *
 * <p>Not part of the public API. Immutable and thread-safe.
 */
public final class MediaType {

  private final String type;
  private final String subtype;
  private final Map<String, String> parameters;
  private final String canonical;

  private MediaType(String type, String subtype, Map<String, String> parameters) {
    this.type = type;
    this.subtype = subtype;
    if (isJson(type, subtype) && "utf-8".equals(parameters.get("charset"))) {
      parameters.remove("charset");
    }
    this.parameters = parameters;
    StringBuilder sb = new StringBuilder(type.length() + subtype.length() + 1);
    sb.append(type).append('/').append(subtype);
    for (Map.Entry<String, String> p : parameters.entrySet()) {
      sb.append(';').append(p.getKey()).append('=');
      appendValue(sb, p.getValue());
    }
    this.canonical = sb.toString();
  }

  /**
   * Parses a {@code Content-Type} field value: {@code type "/" subtype *( OWS ";" OWS [ name "="
   * ( token / quoted-string ) ] )}, with optional whitespace around it.
   *
   * @param value the field value, may be {@code null}
   * @return the media type, or {@code null} if {@code value} is {@code null}, does not follow that
   *     grammar, or names a parameter twice
   */
  public static @Nullable MediaType parse(@Nullable String value) {
    if (value == null) {
      return null;
    }
    int len = value.length();
    int p = skipOws(value, 0);
    int typeEnd = token(value, p);
    if (typeEnd == p || typeEnd >= len || value.charAt(typeEnd) != '/') {
      return null;
    }
    String type = value.substring(p, typeEnd).toLowerCase(Locale.ROOT);
    p = typeEnd + 1;
    int subtypeEnd = token(value, p);
    if (subtypeEnd == p) {
      return null;
    }
    String subtype = value.substring(p, subtypeEnd).toLowerCase(Locale.ROOT);
    p = subtypeEnd;
    Map<String, String> parameters = new TreeMap<>();
    while (true) {
      p = skipOws(value, p);
      if (p >= len) {
        break;
      }
      if (value.charAt(p) != ';') {
        return null;
      }
      p = skipOws(value, p + 1);
      if (p >= len || value.charAt(p) == ';') {
        continue; // an empty parameter, which the grammar allows
      }
      int nameEnd = token(value, p);
      if (nameEnd == p || nameEnd >= len || value.charAt(nameEnd) != '=') {
        return null;
      }
      String name = value.substring(p, nameEnd).toLowerCase(Locale.ROOT);
      p = nameEnd + 1;
      String parameterValue;
      if (p < len && value.charAt(p) == '"') {
        StringBuilder sb = new StringBuilder();
        p++;
        while (true) {
          if (p >= len) {
            return null; // unterminated quoted-string
          }
          char c = value.charAt(p);
          if (c == '"') {
            p++;
            break;
          }
          if (c == '\\') {
            if (p + 1 >= len || !isQuotedPairChar(value.charAt(p + 1))) {
              return null;
            }
            sb.append(value.charAt(p + 1));
            p += 2;
          } else if (isQdtext(c)) {
            sb.append(c);
            p++;
          } else {
            return null;
          }
        }
        parameterValue = sb.toString();
      } else {
        int valueEnd = token(value, p);
        if (valueEnd == p) {
          return null;
        }
        parameterValue = value.substring(p, valueEnd);
        p = valueEnd;
      }
      if (name.equals("charset")) {
        parameterValue = parameterValue.toLowerCase(Locale.ROOT);
      }
      if (parameters.put(name, parameterValue) != null) {
        return null; // which of two values counts is undefined
      }
    }
    return new MediaType(type, subtype, parameters);
  }

  /**
   * The normal form: {@code type/subtype} then {@code ;name=value} per parameter, sorted by name,
   * without whitespace.
   *
   * @return the text, never {@code null}
   */
  public String canonical() {
    return canonical;
  }

  /**
   * Whether this is JSON: {@code application/json} or a subtype with the {@code +json} suffix (RFC
   * 6839 §3.1).
   *
   * @return whether the body is a JSON text
   */
  public boolean isJson() {
    return isJson(type, subtype);
  }

  /**
   * Whether a JSON body of this type is read as UTF-8: it is JSON and names no other charset.
   *
   * @return whether the body may be canonicalized as UTF-8 JSON
   */
  public boolean isUtf8Json() {
    return isJson() && !parameters.containsKey("charset");
  }

  /**
   * Whether this is {@code application/x-www-form-urlencoded} in an ASCII-compatible charset (none
   * named, {@code utf-8}, {@code us-ascii} or {@code iso-8859-1}), so that its delimiters, {@code +}
   * and percent-encoding are the ASCII bytes whatever the fields hold.
   *
   * @return whether the body may be canonicalized as form fields
   */
  public boolean isAsciiUrlEncodedForm() {
    if (!type.equals("application") || !subtype.equals("x-www-form-urlencoded")) {
      return false;
    }
    String charset = parameters.get("charset");
    return charset == null || charset.equals("utf-8") || charset.equals("us-ascii") || charset.equals("iso-8859-1");
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof MediaType m && m.canonical.equals(canonical);
  }

  @Override
  public int hashCode() {
    return canonical.hashCode();
  }

  /** @return the {@link #canonical()} form */
  @Override
  public String toString() {
    return canonical;
  }

  private static boolean isJson(String type, String subtype) {
    return (type.equals("application") && subtype.equals("json"))
        || (subtype.length() > 5 && subtype.endsWith("+json"));
  }

  private static void appendValue(StringBuilder sb, String v) {
    if (!v.isEmpty() && token(v, 0) == v.length()) {
      sb.append(v);
      return;
    }
    sb.append('"');
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (c == '"' || c == '\\') {
        sb.append('\\');
      }
      sb.append(c);
    }
    sb.append('"');
  }

  private static int skipOws(String s, int p) {
    while (p < s.length() && (s.charAt(p) == ' ' || s.charAt(p) == '\t')) {
      p++;
    }
    return p;
  }

  /** The end of the token (RFC 9110 §5.6.2) that starts at {@code p}; {@code p} if none does. */
  private static int token(String s, int p) {
    while (p < s.length() && isTchar(s.charAt(p))) {
      p++;
    }
    return p;
  }

  private static boolean isTchar(char c) {
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')
        || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
  }

  /** qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text (RFC 9110 §5.6.4). */
  private static boolean isQdtext(char c) {
    return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5B) || (c >= 0x5D && c <= 0x7E)
        || (c >= 0x80 && c <= 0xFF);
  }

  /** quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text ). */
  private static boolean isQuotedPairChar(char c) {
    return c == '\t' || (c >= 0x20 && c <= 0x7E) || (c >= 0x80 && c <= 0xFF);
  }
}
