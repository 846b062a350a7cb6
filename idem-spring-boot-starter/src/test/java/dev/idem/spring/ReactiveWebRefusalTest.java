package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.LeaseIdempotency;
import dev.idem.spring.internal.IdemUnsupportedFailureAnalyzer;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;

/**
 * A reactive web application (Spring WebFlux) does not start with the starter, which cannot protect
 * its requests; a non-web application starts as before. Issue 35: on WebFlux the application
 * started, logged only "Idem keeps idempotency keys in memory", ignored idem.required-key-routes,
 * and the same key ran the handler again.
 */
class ReactiveWebRefusalTest {

  private static IdemUnsupportedException refusal(Throwable failure) {
    return (IdemUnsupportedException) IdemAutoConfigurationTest.causeOf(failure, IdemUnsupportedException.class);
  }

  @Test
  void aReactiveWebApplicationDoesNotStartAndSaysWhatIsSupported() {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.required-key-routes=POST /things")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("reactive web application (Spring WebFlux)")
              .hasMessageContaining("idem.required-key-routes").hasMessageContaining("Spring MVC")
              .hasMessageContaining("idem.enabled=false");
          FailureAnalysis analysis = new IdemUnsupportedFailureAnalyzer().analyze(ctx.getStartupFailure());
          assertThat(analysis.getDescription()).startsWith("Idem cannot protect what is configured: this is a reactive web application")
              .doesNotContain("idem.enabled=false");
          assertThat(analysis.getAction()).contains("servlet stack: Spring MVC", "idem.enabled=false",
              "spring.autoconfigure.exclude=dev.idem.spring.IdemAutoConfiguration");
        });
  }

  @Test
  void aReactiveWebApplicationStartsWithIdemDisabled() {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.enabled=false")
        .run(ctx -> assertThat(ctx).hasNotFailed().doesNotHaveBean(LeaseIdempotency.class));
  }

  @Test
  void aNonWebApplicationStartsAsBefore() {
    // a Kafka consumer, spring.main.web-application-type=none: no principal source needed, no refusal
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .run(ctx -> assertThat(ctx).hasNotFailed().hasSingleBean(LeaseIdempotency.class));
  }
}
