package dev.idem.examples.notes;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.Principal;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * HTTP Basic authentication against a fixed list of users ({@code notes.users=alice:secret,bob:secret}),
 * so that the service can be run with several callers whose keys must not share a scope. An
 * authenticated request's {@link HttpServletRequest#getUserPrincipal()} is the user, which Idem
 * takes as the principal of the key's scope with {@code idem.principal=servlet}. A request without
 * an {@code Authorization} header goes on anonymous (Idem's anonymous principal); a request with a
 * malformed header or wrong credentials is answered 401. Passwords sit in clear in the configuration:
 * this is for tests and demonstrations of per-user scopes, not a way to secure a service (use Spring
 * Security for that). Thread-safe: the user list is immutable.
 */
final class BasicUsersFilter extends OncePerRequestFilter {

  private final Map<String, byte[]> users;

  /**
   * @param spec {@code name:password} pairs separated by commas; a name holds no {@code ':'}
   * @throws IllegalArgumentException if a pair has no {@code ':'} or an empty name, or a name repeats
   */
  BasicUsersFilter(String spec) {
    Map<String, byte[]> parsed = new LinkedHashMap<>();
    for (String pair : spec.split(",")) {
      String p = pair.strip();
      int colon = p.indexOf(':');
      if (colon <= 0) {
        throw new IllegalArgumentException("notes.users: each user is name:password, got '" + p + "'");
      }
      if (parsed.put(p.substring(0, colon), p.substring(colon + 1).getBytes(StandardCharsets.UTF_8)) != null) {
        throw new IllegalArgumentException("notes.users: the user " + p.substring(0, colon) + " is listed twice");
      }
    }
    this.users = Map.copyOf(parsed);
  }

  @Override
  protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    String header = request.getHeader("Authorization");
    if (header == null) {
      chain.doFilter(request, response);
      return;
    }
    String user = authenticate(header);
    if (user == null) {
      response.setHeader("WWW-Authenticate", "Basic realm=\"notes\", charset=\"UTF-8\"");
      response.setStatus(HttpServletResponse.SC_UNAUTHORIZED);
      response.setContentType("application/problem+json");
      response.getWriter().write("{\"type\":\"about:blank\",\"title\":\"Unauthorized\",\"status\":401,"
          + "\"detail\":\"the Authorization header is not Basic credentials of a known user\"}");
      return;
    }
    Principal principal = () -> user;
    chain.doFilter(new HttpServletRequestWrapper(request) {
      @Override
      public Principal getUserPrincipal() {
        return principal;
      }

      @Override
      public String getRemoteUser() {
        return user;
      }

      @Override
      public String getAuthType() {
        return HttpServletRequest.BASIC_AUTH;
      }
    }, response);
  }

  /** @return the user these credentials name, or {@code null} if they are malformed or wrong */
  private String authenticate(String header) {
    if (header.length() < 6 || !header.regionMatches(true, 0, "Basic ", 0, 6)) {
      return null;
    }
    String decoded;
    try {
      decoded = new String(Base64.getDecoder().decode(header.substring(6).strip()), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException notBase64) {
      return null;
    }
    int colon = decoded.indexOf(':');
    if (colon <= 0) {
      return null;
    }
    byte[] expected = users.get(decoded.substring(0, colon));
    byte[] given = decoded.substring(colon + 1).getBytes(StandardCharsets.UTF_8);
    return expected != null && MessageDigest.isEqual(expected, given) ? decoded.substring(0, colon) : null;
  }
}
