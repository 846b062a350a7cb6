package dev.idem.spring.internal;

import dev.idem.spring.IdemUnsupportedException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns an {@link IdemUnsupportedException} into Spring Boot's "APPLICATION FAILED TO START"
 * report: what Idem cannot protect, and as the action what is supported and how to opt out.
 * Stateless and thread-safe.
 */
public class IdemUnsupportedFailureAnalyzer extends AbstractFailureAnalyzer<IdemUnsupportedException> {

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, IdemUnsupportedException cause) {
    return new FailureAnalysis("Idem cannot protect what is configured: " + cause.unsupported() + ".", cause.supported(), cause);
  }
}
