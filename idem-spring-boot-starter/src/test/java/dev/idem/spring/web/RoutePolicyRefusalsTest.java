package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemAutoConfigurationTest;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.Idempotent;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * What a route's own policy refuses at start-up, with a message naming the entry (nothing is
 * silently left unprotected), and how Spring's path patterns become the filter's.
 */
class RoutePolicyRefusalsTest {

  @TempDir Path dir;

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db"), "idem.principal=shared",
            "idem.store=memory");
  }

  @Test
  void aRouteInTransactionalModeWithItsKeysInRedisIsRefused() {
    app().withPropertyValues("idem.routes.orders.route=POST /orders", "idem.routes.orders.mode=transactional",
        "idem.routes.orders.store=redis").run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(ctx.getStartupFailure()).rootCause().hasMessageContaining("idem.routes.orders.store")
              .hasMessageContaining("transactional");
        });
  }

  @Test
  void aRoutePolicyWithoutARouteIsRefused() {
    app().withPropertyValues("idem.routes.payments.mode=lease").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).rootCause().hasMessageContaining("idem.routes.payments.route");
    });
  }

  @Test
  void aRouteNamedByAPolicyAndByTheKeyRoutesIsRefused() {
    app().withPropertyValues("idem.routes.payments.route=POST /payments", "idem.required-key-routes=POST /payments")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(ctx.getStartupFailure()).rootCause().hasMessageContaining("POST /payments").hasMessageContaining("already added");
        });
  }

  @Test
  void aLeaseNotShorterThanTheRouteRetentionIsRefused() {
    app().withPropertyValues("idem.routes.payments.route=POST /payments", "idem.routes.payments.mode=lease",
        "idem.routes.payments.retention=10s", "idem.routes.payments.lease=30s").run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(ctx.getStartupFailure()).hasStackTraceContaining("idem.routes.payments.retention")
              .hasStackTraceContaining("must be longer than the lease");
        });
  }

  @Test
  void aLeaseRouteOnTheFiltersStoreTakesItsOwnRetentionAndTheOthersStayAsConfigured() {
    app().withPropertyValues("idem.routes.payments.route=POST /payments", "idem.routes.payments.mode=lease",
        "idem.routes.payments.retention=48h", "idem.routes.payments.key=optional").run(ctx -> {
          assertThat(ctx).hasNotFailed();
          IdempotencyFilterConfig config = ctx.getBean(IdempotencyFilterConfig.class);
          IdempotencyFilterConfig.Route payments = config.routeFor("POST", "/payments");
          assertThat(payments.toString()).startsWith("POST /payments (optional; lease mode").contains("retention PT48H");
          assertThat(config.engineFor(payments)).isNotSameAs(config.engine());
          IdempotencyFilterConfig.Route other = config.routeFor("POST", "/notes");
          assertThat(other.operation()).isEqualTo("POST /**");
          assertThat(config.engineFor(other)).isSameAs(config.engine());
        });
  }

  /**
   * Was: the start-up log named the filter's mode and store only; a route's own store and the
   * {@code @Idempotent} methods' store (Redis, say) were never mentioned.
   */
  @Test
  @org.junit.jupiter.api.extension.ExtendWith(org.springframework.boot.test.system.OutputCaptureExtension.class)
  void theStartUpLogNamesEachRoutesPolicyAndTheMethodsStores(org.springframework.boot.test.system.CapturedOutput output) {
    app().withConfiguration(AutoConfigurations.of(org.springframework.boot.autoconfigure.aop.AopAutoConfiguration.class))
        .withUserConfiguration(IdemAutoConfigurationTest.PaymentsConfig.class)
        .withPropertyValues("idem.routes.payments.route=POST /payments", "idem.routes.payments.mode=lease",
            "idem.routes.payments.retention=48h").run(ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(output).contains("Idem: route POST /payments (required; lease mode, store memory")
                  .contains("retention PT48H").contains("[idem.routes.payments]")
                  .contains("@Idempotent method(s); inside a Spring transaction they join it, keys in table idem_keys;"
                      + " outside one, lease mode, keys in memory");
            });
  }

  /**
   * Was: the routes of idem.required-key-routes (and the default optional POST and PATCH) were never
   * named at start-up, so a user could not see that POST /orders required a key.
   */
  @Test
  @org.junit.jupiter.api.extension.ExtendWith(org.springframework.boot.test.system.OutputCaptureExtension.class)
  void theStartUpLogNamesTheRequiredAndOptionalRoutes(org.springframework.boot.test.system.CapturedOutput output) {
    app().withPropertyValues("idem.required-key-routes=POST /orders").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(output).contains("Idem: routes POST /orders (required), POST /** (optional), PATCH /** (optional);"
          + " other requests pass through");
    });
  }

  @Test
  void springPathPatternsBecomeTheFiltersAndPartialSegmentsAreRefused() {
    assertThat(HandlerPolicies.filterPattern("s", "/orders")).isEqualTo("/orders");
    assertThat(HandlerPolicies.filterPattern("s", "/orders/{id}/lines")).isEqualTo("/orders/*/lines");
    assertThat(HandlerPolicies.filterPattern("s", "/orders/{id:\\d+}")).isEqualTo("/orders/*");
    assertThat(HandlerPolicies.filterPattern("s", "/files/{*path}")).isEqualTo("/files/**");
    assertThat(HandlerPolicies.filterPattern("s", "/files/**")).isEqualTo("/files/**");
    assertThat(HandlerPolicies.filterPattern("s", "/")).isEqualTo("/");
    assertThatThrownBy(() -> HandlerPolicies.filterPattern("s", "/files/{name}.txt"))
        .isInstanceOf(IdemConfigurationException.class).hasMessageContaining("{name}.txt");
    assertThatThrownBy(() -> HandlerPolicies.filterPattern("s", "/a/**/b")).isInstanceOf(IdemConfigurationException.class);
  }
}
