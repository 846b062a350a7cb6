package dev.idem.spring.internal;

import dev.idem.spring.IdemConfigurationException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Turns an {@link IdemConfigurationException} into Spring Boot's "APPLICATION FAILED TO START" report. */
public class IdemFailureAnalyzer extends AbstractFailureAnalyzer<IdemConfigurationException> {

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, IdemConfigurationException cause) {
    return new FailureAnalysis(
        "Idem is misconfigured: " + cause.getMessage(),
        "Fix the property " + cause.property() + " (every idem.* property is in docs/properties.md of Idem's repository, and in your IDE's completion).",
        cause);
  }
}
