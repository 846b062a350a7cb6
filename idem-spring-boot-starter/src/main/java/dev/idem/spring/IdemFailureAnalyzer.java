package dev.idem.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Turns an {@link IdemConfigurationException} into Spring Boot's "APPLICATION FAILED TO START" report. */
class IdemFailureAnalyzer extends AbstractFailureAnalyzer<IdemConfigurationException> {

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, IdemConfigurationException cause) {
    return new FailureAnalysis(
        "Idem is misconfigured: " + cause.getMessage(),
        "Fix the property " + cause.property() + " (see the idem.* properties in your IDE's completion or the README).",
        cause);
  }
}
