package dev.idem.servlet.internal;

import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A {@link CapturingResponse}'s head: everything the handler sets but the body (status, header
 * fields, cookies, content type and character encoding, locale, trailer supplier), as plain state.
 * The response decides when a change is allowed (not once committed); this class keeps what was
 * set and writes it to the container's response. One instance serves one request on one thread;
 * not thread-safe.
 */
final class CapturedHead {

  /** Lower-case name to the field (first spelling, values). */
  private final Map<String, Field> fields = new LinkedHashMap<>();
  private final List<Cookie> cookies = new ArrayList<>();
  int status = HttpServletResponse.SC_OK;
  /** The content type as set, or {@code null}; its charset parameter may be left to {@link #charset}. */
  private @Nullable String contentType;
  /** The character encoding chosen, or {@code null} for the container's default. */
  @Nullable String charset;
  /** The locale set, or {@code null} for the container's. */
  @Nullable Locale locale;
  /** The trailer supplier set, or {@code null} for none. */
  @Nullable Supplier<Map<String, String>> trailers;

  // ---- header fields ------------------------------------------------------------------------

  /** Replaces the field {@code name} by one value. */
  void set(String name, String value) {
    Field f = new Field(name);
    f.values.add(value);
    fields.put(name.toLowerCase(Locale.ROOT), f);
  }

  /** Adds a value to the field {@code name}, keeping its first spelling. */
  void add(String name, String value) {
    fields.computeIfAbsent(name.toLowerCase(Locale.ROOT), k -> new Field(name)).values.add(value);
  }

  void remove(String name) {
    fields.remove(name.toLowerCase(Locale.ROOT));
  }

  /** @return the first value of the field, Content-Type included; {@code null} if none */
  @Nullable String first(String name) {
    if (name.equalsIgnoreCase("Content-Type")) {
      return contentType();
    }
    Field f = fields.get(name.toLowerCase(Locale.ROOT));
    return f == null || f.values.isEmpty() ? null : f.values.get(0);
  }

  /** @return every value of the field, Content-Type included */
  List<String> all(String name) {
    if (name.equalsIgnoreCase("Content-Type")) {
      String ct = contentType();
      return ct == null ? List.of() : List.of(ct);
    }
    Field f = fields.get(name.toLowerCase(Locale.ROOT));
    return f == null ? List.of() : List.copyOf(f.values);
  }

  /** @return the names of the fields set, Content-Type first if set */
  List<String> names() {
    List<String> names = new ArrayList<>();
    if (contentType() != null) {
      names.add("Content-Type");
    }
    fields.values().forEach(f -> names.add(f.name));
    return names;
  }

  /**
   * @return every header field, in order, name as first spelled to values, Content-Type included
   *     as a field
   */
  Map<String, List<String>> fields() {
    Map<String, List<String>> all = new LinkedHashMap<>();
    String ct = contentType();
    if (ct != null) {
      all.put("Content-Type", List.of(ct));
    }
    fields.values().forEach(f -> all.put(f.name, List.copyOf(f.values)));
    return all;
  }

  void addCookie(Cookie cookie) {
    cookies.add(cookie);
  }

  // ---- content type and character encoding --------------------------------------------------

  /**
   * Sets the content type. Its charset parameter chooses the encoding, unless the writer was
   * already obtained: then the encoding stays and the parameter is dropped.
   *
   * @param type the media type, or {@code null} to clear it (and the encoding, before the writer)
   * @param writerOpen whether the handler has obtained the writer
   */
  void contentType(@Nullable String type, boolean writerOpen) {
    if (type == null) {
      contentType = null;
      if (!writerOpen) {
        charset = null;
      }
      return;
    }
    String declared = charsetParameter(type);
    if (declared != null && !writerOpen) {
      charset = declared;
    }
    contentType = declared != null && writerOpen ? withoutCharset(type) : type;
  }

  /** @return the content type with the chosen encoding as its charset parameter, or {@code null} */
  @Nullable String contentType() {
    if (contentType == null) {
      return null;
    }
    if (charsetParameter(contentType) != null || charset == null) {
      return contentType;
    }
    return contentType + ";charset=" + charset;
  }

  /** Chooses the encoding; a charset parameter of the content type gives way to it. */
  void characterEncoding(@Nullable String encoding) {
    charset = encoding;
    if (contentType != null && charsetParameter(contentType) != null) {
      contentType = withoutCharset(contentType);
    }
  }

  /** Back to a fresh response's head, except for the trailer supplier (as {@code reset()}). */
  void clear() {
    status = HttpServletResponse.SC_OK;
    fields.clear();
    cookies.clear();
    contentType = null;
    charset = null;
    locale = null;
  }

  /**
   * Writes status, header fields, cookies and trailer supplier to the container's response,
   * without framing fields and without an {@code Idempotency-Key} field, which the filter sets
   * itself to the request's.
   */
  void writeTo(HttpServletResponse response) {
    response.setStatus(status);
    String ct = contentType();
    if (ct != null) {
      response.setContentType(ct);
    }
    for (Field f : fields.values()) {
      String lower = f.name.toLowerCase(Locale.ROOT);
      if (lower.equals("transfer-encoding") || lower.equals("content-length")) {
        continue; // framing is the container's, for the bytes written here
      }
      if (lower.equals("idempotency-key")) {
        continue; // the filter sets it itself, to the request's field: never twice, never another value
      }
      for (String v : f.values) {
        response.addHeader(f.name, v);
      }
    }
    for (Cookie c : cookies) {
      response.addCookie(c);
    }
    if (trailers != null) {
      response.setTrailerFields(trailers);
    }
  }

  private static @Nullable String charsetParameter(String type) {
    for (String param : type.split(";")) {
      String p = param.trim();
      if (p.regionMatches(true, 0, "charset=", 0, 8)) {
        String v = p.substring(8).trim();
        if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) {
          v = v.substring(1, v.length() - 1);
        }
        return v.isEmpty() ? null : v;
      }
    }
    return null;
  }

  private static String withoutCharset(String type) {
    StringBuilder out = new StringBuilder();
    for (String param : type.split(";")) {
      if (param.trim().regionMatches(true, 0, "charset=", 0, 8)) {
        continue;
      }
      if (out.length() > 0) {
        out.append(';');
      }
      out.append(param.trim());
    }
    return out.toString();
  }

  private static final class Field {
    final String name;
    final List<String> values = new ArrayList<>(1);

    Field(String name) {
      this.name = name;
    }
  }
}
