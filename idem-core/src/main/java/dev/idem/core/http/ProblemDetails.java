package dev.idem.core.http;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * An RFC 9457 problem details object ({@code application/problem+json}) with the members {@code
 * type}, {@code title}, {@code status} and {@code detail}, and extension members (section 3.2) after
 * them. Never carries a stack trace. Framework-free: each HTTP integration writes {@link #toJson()}
 * with {@link #MEDIA_TYPE}, {@code Content-Language: en} and {@code Cache-Control: no-store}.
 * Immutable and thread-safe.
 *
 * @param type the problem type URI, or {@code null} to leave the member out, which RFC 9457
 *     section 3.1.1 reads as {@code "about:blank"}
 * @param title a short summary of the problem type, never {@code null}
 * @param status the HTTP status code, 400 to 599
 * @param detail the explanation of this occurrence, may be {@code null} (member left out)
 * @param extensions extension members in order, name to a {@link String} or a {@link Number}
 *     (written as a JSON string or number); never {@code null}, copied
 */
public record ProblemDetails(@Nullable String type, String title, int status, @Nullable String detail, Map<String, Object> extensions) {

  /** The media type of RFC 9457 section 3 for JSON problem details. */
  public static final String MEDIA_TYPE = "application/problem+json";

  /** Copies the extension members, keeping their order. */
  public ProblemDetails {
    extensions = Collections.unmodifiableMap(new LinkedHashMap<>(extensions));
  }

  /** A problem without extension members; the parameters are those of the record. */
  public ProblemDetails(@Nullable String type, String title, int status, @Nullable String detail) {
    this(type, title, status, detail, Map.of());
  }

  /** @return the JSON text, UTF-8 encoded */
  public byte[] toJson() {
    StringBuilder json = new StringBuilder(128).append('{');
    if (type != null) {
      json.append("\"type\":");
      quote(json, type);
      json.append(',');
    }
    json.append("\"title\":");
    quote(json, title);
    json.append(",\"status\":").append(status);
    if (detail != null) {
      json.append(",\"detail\":");
      quote(json, detail);
    }
    for (Map.Entry<String, Object> member : extensions.entrySet()) {
      json.append(',');
      quote(json, member.getKey());
      json.append(':');
      if (member.getValue() instanceof Number n) {
        json.append(n);
      } else {
        quote(json, String.valueOf(member.getValue()));
      }
    }
    json.append('}');
    return json.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** Appends {@code s} as a JSON string (RFC 8259 section 7). */
  private static void quote(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20 || c == 0x7F || Character.isSurrogate(c) && !pairedAt(s, i)) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  private static boolean pairedAt(String s, int i) {
    char c = s.charAt(i);
    if (Character.isHighSurrogate(c)) {
      return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
    }
    return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
  }

  /**
   * The reason phrase of a status code (RFC 9110 section 15 and the registrations it cites), for the
   * {@code title} of an {@code about:blank} problem (RFC 9457 section 4.2.1).
   *
   * @param status any status code
   * @return the phrase, or {@code "Error"} for an unregistered code; never {@code null}
   */
  public static String reasonPhrase(int status) {
    return switch (status) {
      case 400 -> "Bad Request";
      case 401 -> "Unauthorized";
      case 402 -> "Payment Required";
      case 403 -> "Forbidden";
      case 404 -> "Not Found";
      case 405 -> "Method Not Allowed";
      case 406 -> "Not Acceptable";
      case 407 -> "Proxy Authentication Required";
      case 408 -> "Request Timeout";
      case 409 -> "Conflict";
      case 410 -> "Gone";
      case 411 -> "Length Required";
      case 412 -> "Precondition Failed";
      case 413 -> "Content Too Large";
      case 414 -> "URI Too Long";
      case 415 -> "Unsupported Media Type";
      case 416 -> "Range Not Satisfiable";
      case 417 -> "Expectation Failed";
      case 421 -> "Misdirected Request";
      case 422 -> "Unprocessable Content";
      case 423 -> "Locked";
      case 424 -> "Failed Dependency";
      case 425 -> "Too Early";
      case 426 -> "Upgrade Required";
      case 428 -> "Precondition Required";
      case 429 -> "Too Many Requests";
      case 431 -> "Request Header Fields Too Large";
      case 451 -> "Unavailable For Legal Reasons";
      case 500 -> "Internal Server Error";
      case 501 -> "Not Implemented";
      case 502 -> "Bad Gateway";
      case 503 -> "Service Unavailable";
      case 504 -> "Gateway Timeout";
      case 505 -> "HTTP Version Not Supported";
      case 507 -> "Insufficient Storage";
      case 511 -> "Network Authentication Required";
      default -> "Error";
    };
  }
}
