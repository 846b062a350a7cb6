package dev.idem.servlet;

import dev.idem.core.http.ProblemDetails;
import dev.idem.servlet.internal.ProblemWriter;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/**
 * Writes Idem's own answers ({@link IdemProblem}) for applications that have an error format of
 * their own. The default, {@link #rfc9457()}, writes RFC 9457 problem details ({@code
 * application/problem+json}). Set one with {@link IdempotencyFilterConfig.Builder#problemRenderer};
 * with the Spring Boot starter, a bean of this type is used by the filter and by the {@code
 * @Idempotent} exception resolver.
 *
 * <p>When it is called, the status and the body are not written yet, and the fields Idem sets for
 * the answer are already on the response ({@code Retry-After} on 409 and 503, {@code
 * Idempotency-Key}); a renderer sets the status ({@link IdemProblem#status()}, which it must keep,
 * since clients retry by it), a {@code Content-Type} and the body, and must not reset the response.
 * A renderer that throws a {@link RuntimeException} before it wrote anything is replaced, for that
 * answer, by {@link #rfc9457()}. Implementations must be thread-safe.
 */
@FunctionalInterface
public interface ProblemRenderer {

  /**
   * @param problem what to answer, never {@code null}
   * @param response the uncommitted response, never {@code null}
   * @throws IOException if writing fails
   */
  void render(IdemProblem problem, HttpServletResponse response) throws IOException;

  /**
   * @return the default: RFC 9457 problem details with the members {@code type} (left out for
   *     {@code about:blank}), {@code title}, {@code status}, {@code detail} and the extensions, and
   *     {@code Content-Language: en}, {@code Cache-Control: no-store}
   */
  static ProblemRenderer rfc9457() {
    return (problem, response) ->
        ProblemWriter.write(new ProblemDetails(problem.type(), problem.title(), problem.status(), problem.detail(), problem.extensions()), response);
  }
}
