package dev.idem.spring;

import dev.idem.core.IdemException;
import org.jspecify.annotations.Nullable;

/**
 * The {@code idem.*} configuration is wrong; the application does not start. The message names the
 * property and the rule; {@code IdemFailureAnalyzer} prints it as Spring Boot's start-up report.
 */
public class IdemConfigurationException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final String property;

  /**
   * @param property the property at fault, for example {@code idem.retention}
   * @param message what is wrong and what is allowed
   * @param cause the validation failure, may be {@code null}
   */
  public IdemConfigurationException(String property, String message, @Nullable Throwable cause) {
    super(property + ": " + message, cause);
    this.property = property;
  }

  /** @return the property at fault */
  public String property() {
    return property;
  }
}
