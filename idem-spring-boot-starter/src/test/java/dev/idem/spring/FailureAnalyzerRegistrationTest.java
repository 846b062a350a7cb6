package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spring.internal.IdemFailureAnalyzer;
import dev.idem.spring.internal.IdemUnsupportedFailureAnalyzer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.io.support.SpringFactoriesLoader.FailureHandler;
import org.springframework.core.io.support.SpringFactoriesLoader;

/**
 * Idem's failure analyzers are package-private: Spring Boot finds them in {@code
 * META-INF/spring.factories} and creates them through {@link SpringFactoriesLoader}, which makes a
 * non-public class's constructor accessible, so they need not be public API.
 */
class FailureAnalyzerRegistrationTest {

  @Test
  void springBootCreatesIdemsPackagePrivateFailureAnalyzers() {
    // Spring Boot's own analyzers take arguments (a bean factory, the environment) that only it passes
    List<String> failures = new ArrayList<>();
    List<FailureAnalyzer> analyzers = SpringFactoriesLoader.forDefaultResourceLocation(getClass().getClassLoader())
        .load(FailureAnalyzer.class, null, FailureHandler.handleMessage((message, failure) -> failures.add(message.get())));
    assertThat(failures).noneMatch(message -> message.contains("dev.idem"));
    assertThat(analyzers).hasAtLeastOneElementOfType(IdemFailureAnalyzer.class)
        .hasAtLeastOneElementOfType(IdemUnsupportedFailureAnalyzer.class);
  }
}
