package dev.idem.servlet;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One of Idem's own answers that is not the handler's: a refusal or a failure (a key missing,
 * malformed or reused, a request in progress, a store unavailable, an outcome unknown, a stored
 * response that cannot be read or replayed), as the filter and the Spring starter's {@code
 * @Idempotent} exception resolver hand it to a {@link ProblemRenderer}. By default it is written as
 * RFC 9457 problem details ({@link ProblemRenderer#rfc9457()}). Immutable and thread-safe.
 *
 * @param name the problem's stable name, such as {@code "request-in-progress"} or {@code
 *     "idempotency-key-reused"} (the {@code PROBLEM_*} constants of {@link IdempotencyFilter} end
 *     with these names): what an application with its own error format maps from; never {@code null}
 * @param type the problem type URI under the configured base ({@link
 *     IdempotencyFilterConfig#problemType(String)}), or {@code null} with {@code about:blank}
 *     problem types (RFC 9457 section 3.1.1)
 * @param title a short, human-readable summary in English, never {@code null}
 * @param status the HTTP status code, 400 to 599
 * @param detail the explanation of this occurrence in English, never {@code null}
 * @param extensions more members in order, name to a {@link String} or a {@link Number} (for
 *     example {@code originalStatus} of a response too large to replay); never {@code null}, copied
 */
public record IdemProblem(String name, @Nullable String type, String title, int status, String detail, Map<String, Object> extensions) {

  /**
   * @throws NullPointerException if {@code name}, {@code title}, {@code detail} or {@code
   *     extensions} is {@code null}
   * @throws IllegalArgumentException if {@code status} is not 400 to 599
   */
  public IdemProblem {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(title, "title");
    Objects.requireNonNull(detail, "detail");
    if (status < 400 || status > 599) {
      throw new IllegalArgumentException("status must be 400 to 599, was " + status);
    }
    extensions = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(extensions, "extensions")));
  }
}
