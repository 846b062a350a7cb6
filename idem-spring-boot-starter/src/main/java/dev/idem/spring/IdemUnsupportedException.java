package dev.idem.spring;

import dev.idem.core.IdemException;
import java.util.Objects;

/**
 * The application configures something Idem cannot protect (a web stack, a method's return type),
 * so it does not start: nothing is left silently unprotected. The message says what is not
 * supported and {@link #supported()} what is, and how to opt out; the starter's failure
 * analyzer prints both as Spring Boot's start-up report, without a stack
 * trace.
 *
 * <p>Immutable and thread-safe.
 */
public class IdemUnsupportedException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final String supported;

  /**
   * @param message what Idem cannot protect, naming it (the bean and method, the web stack), never
   *     {@code null}
   * @param supported what is supported instead and how to opt out, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   */
  public IdemUnsupportedException(String message, String supported) {
    super(Objects.requireNonNull(message, "message") + ". " + Objects.requireNonNull(supported, "supported"));
    this.supported = supported;
  }

  /** @return what is supported instead and how to opt out, never {@code null} */
  public String supported() {
    return supported;
  }

  /** @return what Idem cannot protect, without {@link #supported()}; never {@code null} */
  public String unsupported() {
    String message = getMessage();
    return message.substring(0, message.length() - supported.length() - 2);
  }
}
