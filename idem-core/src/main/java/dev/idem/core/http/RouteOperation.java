package dev.idem.core.http;

import dev.idem.core.Fingerprint;
import dev.idem.core.Scope;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * The operation a protected HTTP request's key is scoped by, the same on every stack: {@code
 * "<METHOD> <pattern>"}, with the context path before the pattern when the application is not at
 * the root ({@code "POST /shop/notes"} for the route {@code POST /notes} under {@code /shop}), so
 * that two applications on one store never share a scope. Stateless and thread-safe.
 */
public final class RouteOperation {

  private RouteOperation() {}

  /**
   * @param method the route's method, a token
   * @param context the application's context path, or {@code null}, empty or {@code "/"} at the root
   * @param template the route's pattern, or a handler's path template, starting with {@code /}
   * @return the operation; when that is not a valid scope part (longer than {@value
   *     Scope#MAX_PART_LENGTH} characters, a control character), {@code "sha256:"} and the 64 hex
   *     digits of the SHA-256 of its UTF-8 bytes: no route operation starts so (a method is a token,
   *     without {@code ':'}), so it stays distinct
   */
  public static String of(String method, @Nullable String context, String template) {
    boolean root = context == null || context.isEmpty() || context.equals("/");
    return valid(method + " " + (root ? "" : context) + template);
  }

  /**
   * @param operation a candidate operation
   * @return it when it is a valid scope part, else its {@code "sha256:"} form (see {@link #of})
   */
  public static String valid(String operation) {
    try {
      Scope.of("x", operation); // validates
      return operation;
    } catch (IllegalArgumentException e) {
      return "sha256:" + Fingerprint.ofBytes(operation.getBytes(StandardCharsets.UTF_8)).hex();
    }
  }
}
