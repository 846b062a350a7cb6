package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.LeaseIdempotency;
import dev.idem.spring.internal.IdemUnsupportedFailureAnalyzer;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;

/**
 * What a reactive web application (Spring WebFlux) cannot run does not start, and says what is
 * supported: without idem-webflux nothing would protect its requests (issue 35: on WebFlux the
 * application started, logged only "Idem keeps idempotency keys in memory", ignored
 * idem.required-key-routes, and the same key ran the handler again); with it, transactional mode
 * would block an event loop. A non-web application starts as before.
 */
class ReactiveWebRefusalTest {

  private static IdemUnsupportedException refusal(Throwable failure) {
    return (IdemUnsupportedException) IdemAutoConfigurationTest.causeOf(failure, IdemUnsupportedException.class);
  }

  @Test
  void aReactiveWebApplicationWithoutIdemWebfluxDoesNotStartAndSaysWhatIsSupported() {
    new ReactiveWebApplicationContextRunner()
        .withClassLoader(new FilteredClassLoader("dev.idem.webflux"))
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.required-key-routes=POST /things")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("reactive web application (Spring WebFlux)")
              .hasMessageContaining("idem-webflux").hasMessageContaining("idem.required-key-routes")
              .hasMessageContaining("Spring MVC").hasMessageContaining("idem.enabled=false");
          FailureAnalysis analysis = new IdemUnsupportedFailureAnalyzer().analyze(ctx.getStartupFailure());
          assertThat(analysis.getDescription()).startsWith("Idem cannot protect what is configured: this is a reactive web application")
              .doesNotContain("idem.enabled=false");
          assertThat(analysis.getAction()).contains("dev.idem:idem-webflux", "servlet filter", "idem.enabled=false",
              "spring.autoconfigure.exclude=dev.idem.spring.IdemAutoConfiguration");
        });
  }

  @Test
  void transactionalModeOnWebFluxDoesNotStartAndSaysWhatIsSupported() {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.mode=transactional")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("Spring WebFlux").hasMessageContaining("transactional mode on R2DBC only")
              .hasMessageContaining("idem.mode=transactional").hasMessageContaining("idem.mode=lease")
              .hasMessageContaining("in-memory store").hasMessageContaining("AsyncLeaseStore");
        });
  }

  /** With a DataSource, auto would choose transactional mode on the servlet stack: on WebFlux it asks for idem.mode=lease. */
  @Test
  void autoModeWithADataSourceOnWebFluxDoesNotStartAndNamesLeaseMode() {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withBean("dataSource", DataSource.class, () -> {
          throw new AssertionError("the refusal comes before any bean is created");
        })
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("idem.mode=auto with a DataSource")
              .hasMessageContaining("set idem.mode=lease");
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
