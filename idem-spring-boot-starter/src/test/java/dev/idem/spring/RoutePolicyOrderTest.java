package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.servlet.IdempotencyFilterConfig;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

/**
 * Which policy a request gets when two policy routes could both take it. Was: the first in the
 * order of the {@code idem.routes} map (which Spring Boot builds from the property sources by
 * precedence, so an environment variable that overrides one entry's retention moves that entry
 * first), then the annotations in the order of Spring MVC's handler map (a hash map): a catch-all
 * entry silently took the paths of a more specific one, and which of two annotated handlers won
 * could differ between two instances, each keeping the key in another store. And an annotated
 * {@code /charges/{id}}, which becomes the filter's {@code /charges/*}, took {@code /charges/batch}
 * that Spring MVC sends to another handler, without a policy, and gave it the annotation's.
 */
class RoutePolicyOrderTest {

  @Configuration(proxyBeanMethods = false)
  @EnableWebMvc
  static class Mvc {}

  @RestController
  static class Payments {
    @PostMapping("/payments/refunds")
    @IdempotencyPolicy(mode = IdemProperties.Mode.LEASE, store = IdemProperties.StoreType.MEMORY, retention = "72h")
    String refund() {
      return "{}";
    }

    @PostMapping("/payments/{id}")
    @IdempotencyPolicy(mode = IdemProperties.Mode.LEASE, store = IdemProperties.StoreType.MEMORY, retention = "96h")
    String pay(@PathVariable("id") String id) {
      return "{}";
    }
  }

  @RestController
  static class Charges {
    @PostMapping("/charges/{id}")
    @IdempotencyPolicy(mode = IdemProperties.Mode.LEASE, store = IdemProperties.StoreType.MEMORY, retention = "72h")
    String charge(@PathVariable("id") String id) {
      return "{}";
    }

    @PostMapping("/charges/batch")
    String batch() {
      return "{}";
    }
  }

  private final WebApplicationContextRunner web = new WebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
      .withPropertyValues("idem.principal=shared", "idem.store=memory");

  private static String policyOf(IdempotencyFilterConfig config, String path) {
    IdempotencyFilterConfig.Route route = config.routeFor("POST", path);
    assertThat(route).as(path).isNotNull();
    return route.toString();
  }

  @Test
  void aCatchAllPolicyInThePropertiesDoesNotTakeTheRoutesOfAMoreSpecificAnnotatedHandler() {
    web.withUserConfiguration(Mvc.class, Payments.class)
        .withPropertyValues("idem.routes.all.route=POST /payments/**", "idem.routes.all.mode=lease", "idem.routes.all.retention=48h")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          IdempotencyFilterConfig config = ctx.getBean(IdempotencyFilterConfig.class);
          assertThat(policyOf(config, "/payments/refunds")).contains("retention PT72H");
          assertThat(policyOf(config, "/payments/7")).contains("retention PT96H");
          assertThat(policyOf(config, "/payments/7/lines")).contains("retention PT48H");
        });
  }

  @Test
  void ofTwoPolicyEntriesInThePropertiesTheMoreSpecificWinsWhateverTheirOrder() {
    for (String[] order : new String[][] {{"a", "b"}, {"b", "a"}}) {
      web.withPropertyValues("idem.routes." + order[0] + ".route=POST /x/**", "idem.routes." + order[0] + ".retention=48h",
              "idem.routes." + order[0] + ".mode=lease",
              "idem.routes." + order[1] + ".route=POST /x/y", "idem.routes." + order[1] + ".retention=72h",
              "idem.routes." + order[1] + ".mode=lease")
          .run(ctx -> {
            assertThat(ctx).hasNotFailed();
            IdempotencyFilterConfig config = ctx.getBean(IdempotencyFilterConfig.class);
            assertThat(policyOf(config, "/x/y")).as("order %s", String.join(",", order)).contains("retention PT72H");
            assertThat(policyOf(config, "/x/z")).as("order %s", String.join(",", order)).contains("retention PT48H");
          });
    }
  }

  @Test
  void anAnnotatedVariableSegmentThatWouldTakeAnotherHandlersLiteralPathIsRefused() {
    web.withUserConfiguration(Mvc.class, Charges.class).run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).hasStackTraceContaining("/charges/batch").hasStackTraceContaining("Charges.charge");
    });
  }
}
