package dev.idem.spring.web;

import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationListener;
import org.springframework.util.ClassUtils;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.function.RouterFunction;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping;

/**
 * Once the application is ready, says with a WARN log line each configured route ({@code
 * idem.required-key-routes}, {@code idem.optional-key-routes}) that matches no handler of Spring
 * MVC: a typo such as {@code POST /ordres} would otherwise leave the endpoint it was meant for
 * without that route's key requirement, and say nothing. A route matches a handler when the
 * handler's request methods include the route's (or are any method) and some path matches both the
 * route's pattern and one of the handler's patterns (with {@code spring.mvc.servlet.path} in
 * front); a catch-all such as {@code POST /**} is fine as long as one POST handler exists. The
 * default routes ({@code POST /**} and {@code PATCH /**} while {@code idem.optional-key-routes} is
 * not set) are not checked: an application without a PATCH handler is no mistake.
 *
 * <p>It reads the {@code @RequestMapping} handlers (of every {@link RequestMappingInfoHandlerMapping}
 * bean, Actuator's endpoints included, Spring Boot's {@code /error} left out: it takes every
 * method); functional routes ({@code RouterFunction} beans) cannot be
 * read, and when the application has some the warning says so. It only logs: the application
 * starts either way. Immutable and thread-safe.
 */
final class IdemRouteCheck implements ApplicationListener<ApplicationReadyEvent> {

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  /** The defaults of {@code idem.optional-key-routes}, not checked unless the property is set. */
  private static final List<String> DEFAULT_OPTIONAL_ROUTES = List.copyOf(new IdemProperties().getOptionalKeyRoutes());

  /**
   * A handler as the check sees it.
   *
   * @param methods its request methods; empty for any method
   * @param patterns its path patterns, with the servlet path in front
   */
  record Handler(Set<String> methods, Set<String> patterns) {
    Handler {
      methods = Set.copyOf(methods);
      patterns = Set.copyOf(patterns);
    }
  }

  /** Spring Boot's {@code ErrorController}: 3.x, then 4.x, where it moved. */
  private static final Set<String> ERROR_CONTROLLERS = Set.of(
      "org.springframework.boot.web.servlet.error.ErrorController", "org.springframework.boot.webmvc.error.ErrorController");

  private final List<IdempotencyFilterConfig.Route> routes;
  private final String servletPath;

  /**
   * @param config the filter's configuration, whose routes are checked, never {@code null}
   * @param optionalRoutesSet whether {@code idem.optional-key-routes} is set; if not, its defaults
   *     are not checked
   * @param servletPath {@code spring.mvc.servlet.path}, or {@code null} for the default {@code /}
   */
  IdemRouteCheck(IdempotencyFilterConfig config, boolean optionalRoutesSet, @Nullable String servletPath) {
    Objects.requireNonNull(config, "config");
    List<IdempotencyFilterConfig.Route> checked = new ArrayList<>();
    for (IdempotencyFilterConfig.Route r : config.routes()) {
      boolean defaultRoute = r.requirement() == KeyRequirement.OPTIONAL
          && DEFAULT_OPTIONAL_ROUTES.contains(r.operation());
      if (optionalRoutesSet || !defaultRoute) {
        checked.add(r);
      }
    }
    this.routes = List.copyOf(checked);
    this.servletPath = servletPath == null || servletPath.isEmpty() || servletPath.equals("/") ? ""
        : (servletPath.endsWith("/") ? servletPath.substring(0, servletPath.length() - 1) : servletPath);
  }

  @Override
  public void onApplicationEvent(ApplicationReadyEvent event) {
    check(event.getApplicationContext());
  }

  /** Logs a WARN line for each route that matches no handler of {@code context}. */
  void check(ApplicationContext context) {
    if (routes.isEmpty()) {
      return;
    }
    List<Handler> handlers = new ArrayList<>();
    for (RequestMappingInfoHandlerMapping mapping : context.getBeansOfType(RequestMappingInfoHandlerMapping.class, false, false).values()) {
      for (Map.Entry<RequestMappingInfo, HandlerMethod> handler : mapping.getHandlerMethods().entrySet()) {
        if (isErrorController(handler.getValue().getBeanType())) {
          continue; // Spring Boot's /error takes every method: it would make any catch-all look fine
        }
        RequestMappingInfo info = handler.getKey();
        Set<String> methods = new LinkedHashSet<>();
        info.getMethodsCondition().getMethods().forEach(m -> methods.add(String.valueOf(m)));
        Set<String> patterns = new LinkedHashSet<>();
        info.getPatternValues().forEach(p -> patterns.add(servletPath + (p.isEmpty() ? "/" : p)));
        handlers.add(new Handler(methods, patterns));
      }
    }
    boolean functional = hasRouterFunctions(context);
    for (IdempotencyFilterConfig.Route r : unmatched(routes, handlers)) {
      LOG.warn("Idem: the route \"{}\" of {} matches no handler of Spring MVC{}: no request reaches a handler through it,"
          + " so the endpoint it was meant for does not get its key requirement ({}); check its method and path pattern",
          r.operation(), r.requirement() == KeyRequirement.REQUIRED ? "idem.required-key-routes" : "idem.optional-key-routes",
          functional ? " (functional routes, RouterFunction beans, are not checked)" : "",
          r.requirement().name().toLowerCase(Locale.ROOT));
    }
  }

  /**
   * @param type a handler's bean type, never {@code null}
   * @return whether it is Spring Boot's error controller (of either line), which answers {@code
   *     /error} for every request method
   */
  static boolean isErrorController(Class<?> type) {
    for (Class<?> c : ClassUtils.getAllInterfacesForClassAsSet(type)) {
      if (ERROR_CONTROLLERS.contains(c.getName())) {
        return true;
      }
    }
    return false;
  }

  private static boolean hasRouterFunctions(ApplicationContext context) {
    return context.getBeanNamesForType(RouterFunction.class, false, false).length > 0;
  }

  /**
   * @param routes the routes to check, never {@code null}
   * @param handlers the application's handlers, never {@code null}
   * @return the routes that match none of them, in their order
   */
  static List<IdempotencyFilterConfig.Route> unmatched(List<IdempotencyFilterConfig.Route> routes, Collection<Handler> handlers) {
    List<IdempotencyFilterConfig.Route> unmatched = new ArrayList<>();
    for (IdempotencyFilterConfig.Route r : routes) {
      boolean matched = false;
      for (Handler h : handlers) {
        if (h.methods().isEmpty() || h.methods().contains(r.method())) {
          for (String pattern : h.patterns()) {
            if (overlap(segments(r.pattern()), 0, segments(pattern), 0)) {
              matched = true;
              break;
            }
          }
        }
        if (matched) {
          break;
        }
      }
      if (!matched) {
        unmatched.add(r);
      }
    }
    return unmatched;
  }

  private static String[] segments(String pattern) {
    String p = pattern.startsWith("/") ? pattern.substring(1) : pattern;
    return p.split("/", -1);
  }

  /**
   * Whether some path matches both the route's segments from {@code i} ({@code *} one segment, a
   * final {@code **} any number) and the handler's from {@code j} (Spring's patterns: a segment with
   * a variable or a wildcard is taken to match any one segment, {@code **} and {@code {*name}} any
   * number). Generous where unsure, so a warning is never wrong about a route that can match.
   */
  static boolean overlap(String[] route, int i, String[] handler, int j) {
    if (i < route.length && route[i].equals("**")) {
      return true; // the route's final ** matches whatever the handler's remaining segments match
    }
    if (j < handler.length && (handler[j].equals("**") || (handler[j].startsWith("{*") && handler[j].endsWith("}")))) {
      return overlap(route, i, handler, j + 1) || (i < route.length && overlap(route, i + 1, handler, j));
    }
    if (i == route.length || j == handler.length) {
      return i == route.length && j == handler.length;
    }
    return segmentsOverlap(route[i], handler[j]) && overlap(route, i + 1, handler, j + 1);
  }

  private static boolean segmentsOverlap(String route, String handler) {
    boolean handlerWildcard = handler.indexOf('{') >= 0 || handler.indexOf('*') >= 0 || handler.indexOf('?') >= 0;
    if (route.equals("*")) {
      return handlerWildcard || !handler.isEmpty();
    }
    return handlerWildcard || route.equals(handler);
  }
}
