package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import dev.idem.spring.BootLine;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.ClassUtils;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

/**
 * Issue 35: a configured route that matches no handler, such as a typo {@code POST /ordres}, is
 * said at start-up (a WARN line once the application is ready); one that matches a handler, or a
 * catch-all with at least one handler of its method, is not.
 */
@ExtendWith(OutputCaptureExtension.class)
class IdemRouteCheckTest {

  private static IdempotencyFilterConfig.Route route(String method, String pattern) {
    return IdempotencyFilterConfig.Route.of(method, pattern, KeyRequirement.REQUIRED);
  }

  private static List<String> unmatched(List<IdempotencyFilterConfig.Route> routes, IdemRouteCheck.Handler... handlers) {
    return IdemRouteCheck.unmatched(routes, List.of(handlers)).stream().map(IdempotencyFilterConfig.Route::operation).toList();
  }

  private static IdemRouteCheck.Handler handler(String method, String... patterns) {
    return new IdemRouteCheck.Handler(method == null ? Set.of() : Set.of(method), Set.of(patterns));
  }

  @Test
  void aRouteMatchingNoHandlerIsUnmatched() {
    IdemRouteCheck.Handler orders = handler("POST", "/orders");
    IdemRouteCheck.Handler order = handler("GET", "/orders/{id}");
    assertThat(unmatched(List.of(route("POST", "/ordres"), route("POST", "/orders"), route("PUT", "/orders"),
        route("POST", "/orders/*"), route("GET", "/orders/7"), route("GET", "/orders/*/lines")), orders, order))
        .containsExactly("POST /ordres", "PUT /orders", "POST /orders/*", "GET /orders/*/lines");
  }

  @Test
  void aCatchAllMatchesWhenOneHandlerOfItsMethodExists() {
    assertThat(unmatched(List.of(route("POST", "/**"), route("PATCH", "/**")), handler("POST", "/anything/{id}")))
        .containsExactly("PATCH /**");
    assertThat(unmatched(List.of(route("POST", "/api/**")), handler("POST", "/api"))).isEmpty();
  }

  @Test
  void springsWildcardsAndAnyMethodHandlersMatchGenerously() {
    assertThat(unmatched(List.of(route("POST", "/files/a/b/c"), route("DELETE", "/x/y")),
        handler("POST", "/files/**"), handler(null, "/{*path}"))).isEmpty();
    assertThat(unmatched(List.of(route("POST", "/notes/*")), handler("POST", "/notes/{id}.json"))).isEmpty();
    assertThat(unmatched(List.of(route("POST", "/")), handler("POST", "/"))).isEmpty();
  }

  /** A Spring MVC application with two handlers. */
  @Configuration(proxyBeanMethods = false)
  @EnableWebMvc
  static class Mvc {
    @RestController
    static class Orders {
      @PostMapping("/orders")
      String order() {
        return "{}";
      }

      @GetMapping("/orders/{id}")
      String get(@PathVariable String id) {
        return id;
      }
    }
  }

  private final WebApplicationContextRunner web = new WebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
      .withUserConfiguration(Mvc.class, Mvc.Orders.class)
      .withPropertyValues("idem.principal=shared");

  private static void ready(org.springframework.context.ConfigurableApplicationContext ctx) {
    ctx.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0], ctx, Duration.ZERO));
  }

  @Test
  void aTypoInAConfiguredRouteIsAWarningOnceTheApplicationIsReady(CapturedOutput output) {
    web.withPropertyValues("idem.required-key-routes=POST /ordres", "idem.optional-key-routes=POST /orders,PATCH /orders")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(output).doesNotContain("matches no handler");
          ready(ctx.getSourceApplicationContext());
          assertThat(output).contains("WARN", "the route \"POST /ordres\" of idem.required-key-routes matches no handler of Spring MVC",
              "the route \"PATCH /orders\" of idem.optional-key-routes matches no handler")
              .doesNotContain("\"POST /orders\" of");
        });
  }

  @Test
  void springBootsErrorControllerWhichTakesEveryMethodDoesNotHideACatchAllWithoutHandlers(CapturedOutput output) throws Exception {
    Class<?> dispatcher = ClassUtils.forName(BootLine.BOOT_4
        ? "org.springframework.boot.webmvc.autoconfigure.DispatcherServletAutoConfiguration"
        : "org.springframework.boot.autoconfigure.web.servlet.DispatcherServletAutoConfiguration", null);
    Class<?> errors = ClassUtils.forName(BootLine.BOOT_4
        ? "org.springframework.boot.webmvc.autoconfigure.error.ErrorMvcAutoConfiguration"
        : "org.springframework.boot.autoconfigure.web.servlet.error.ErrorMvcAutoConfiguration", null);
    web.withConfiguration(AutoConfigurations.of(dispatcher, errors))
        .withPropertyValues("idem.optional-key-routes=POST /**,PATCH /**").run(ctx -> {
          assertThat(ctx).hasNotFailed().hasBean("basicErrorController");
          assertThat(IdemRouteCheck.isErrorController(ctx.getBean("basicErrorController").getClass())).isTrue();
          ready(ctx.getSourceApplicationContext());
          assertThat(output).contains("the route \"PATCH /**\" of idem.optional-key-routes matches no handler")
              .doesNotContain("\"POST /**\" of");
        });
  }

  @Test
  void theDefaultRoutesAreNotCheckedUnlessSet(CapturedOutput output) {
    // no PATCH handler: the default PATCH /** is no mistake of the application's
    web.withPropertyValues("idem.required-key-routes=POST /orders").run(ctx -> {
      ready(ctx.getSourceApplicationContext());
      assertThat(output).doesNotContain("matches no handler");
    });
  }
}
