package dev.idem.servlet.internal;

import dev.idem.core.http.ProblemDetails;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/** Writes {@link ProblemDetails} as a whole servlet response. Stateless and thread-safe. */
public final class ProblemWriter {

  private ProblemWriter() {}

  /**
   * Writes {@code problem} as the whole response: status, {@code Content-Type:
   * application/problem+json}, {@code Content-Language: en}, {@code Cache-Control: no-store} and
   * the body with its {@code Content-Length}.
   *
   * @param problem never {@code null}
   * @param response an uncommitted response, never {@code null}
   * @throws IOException if writing fails
   */
  public static void write(ProblemDetails problem, HttpServletResponse response) throws IOException {
    byte[] body = problem.toJson();
    response.setStatus(problem.status());
    response.setContentType(ProblemDetails.MEDIA_TYPE);
    response.setHeader("Content-Language", "en");
    response.setHeader("Cache-Control", "no-store");
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }
}
