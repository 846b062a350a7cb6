package dev.idem.core.http;

import dev.idem.core.StoredResponse;
import java.util.Locale;
import java.util.Set;

/**
 * Which response header fields may never be stored or replayed, and the syntax of a field name:
 * the same rules for every HTTP integration of Idem. Stateless and thread-safe.
 */
public final class HeaderRules {

  /**
   * Lower-case names that are never stored or replayed, whatever the configuration says:
   *
   * <ul>
   *   <li>credentials and session state, which belong to one exchange and one client: {@code
   *       Set-Cookie} (RFC 6265 section 4.1), {@code Set-Cookie2}, {@code Authorization}, {@code
   *       Proxy-Authorization}, {@code WWW-Authenticate}, {@code Proxy-Authenticate}, {@code
   *       Authentication-Info}, {@code Proxy-Authentication-Info} (RFC 9110 section 11);
   *   <li>hop-by-hop and framing fields, which describe one connection or one transfer, not the
   *       response: {@code Connection}, {@code Keep-Alive}, {@code Proxy-Connection}, {@code TE},
   *       {@code Transfer-Encoding}, {@code Trailer}, {@code Upgrade} (RFC 9110 section 7.6.1, RFC
   *       9112 section 6.1) and {@code Content-Length} (recomputed from the stored body, RFC 9110
   *       section 8.6);
   *   <li>{@code Idempotent-Replayed}, which the filter adds itself to every replay, {@code
   *       Idempotency-Key}, which the filter sets itself on every keyed answer to the key field the
   *       request carried (so a replay never sends back a value stored from another request's
   *       field), and {@code Idem-Body-Not-Stored} ({@link dev.idem.core.StoredResponse#BODY_NOT_STORED_HEADER}),
   *       which only Idem writes, to mark an answer too large to store.
   * </ul>
   *
   * <p>{@link #neverStored} also refuses every name that starts with {@code Idem-Trace-} ({@link
   * dev.idem.core.StoredResponse#TRACE_CONTEXT_HEADER_PREFIX}): the first attempt's trace context,
   * which only Idem writes and which is not part of the answer.
   */
  public static final Set<String> NEVER_STORED = Set.of(
      "set-cookie", "set-cookie2", "authorization", "proxy-authorization", "www-authenticate",
      "proxy-authenticate", "authentication-info", "proxy-authentication-info", "connection",
      "keep-alive", "proxy-connection", "te", "transfer-encoding", "trailer", "upgrade",
      "content-length", "idempotent-replayed", "idempotency-key", "idem-body-not-stored");

  private HeaderRules() {}

  /**
   * @param name a field name, never {@code null}
   * @return whether it is one of {@link #NEVER_STORED} or starts with {@code Idem-Trace-}, ignoring case
   */
  public static boolean neverStored(String name) {
    return NEVER_STORED.contains(name.toLowerCase(Locale.ROOT))
        || name.regionMatches(true, 0, StoredResponse.TRACE_CONTEXT_HEADER_PREFIX, 0, StoredResponse.TRACE_CONTEXT_HEADER_PREFIX.length());
  }

  /**
   * @param name a candidate field name, may be {@code null}
   * @return whether it is an RFC 9110 section 5.1 field name ({@code token}: 1 or more {@code tchar})
   */
  public static boolean isFieldName(String name) {
    if (name == null || name.isEmpty()) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      if (!isTchar(name.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  /** RFC 9110 section 5.6.2: {@code tchar}. */
  static boolean isTchar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
  }
}
