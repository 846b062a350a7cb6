package dev.idem.spring.web;

import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdempotencyPolicy;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;

/**
 * The {@link IdempotencyPolicy} annotations of the application's Spring MVC handler methods, read
 * from its handler mappings: one {@link RoutePolicies.Spec} per request method and path pattern of
 * each annotated method, with {@code spring.mvc.servlet.path} in front. Spring's path patterns are
 * turned into the filter's: a literal segment stays, {@code {name}} (with or without a regular
 * expression) and {@code *} match one segment, {@code {*name}} and {@code **} at the end match the
 * rest. Only with spring-webmvc on the class path. Stateless.
 */
final class HandlerPolicies {

  private static final Pattern LITERAL = Pattern.compile("[^{}*?]+");
  private static final Pattern VARIABLE = Pattern.compile("\\{[^*{}][^{}]*}");
  private static final Pattern CAPTURE_REST = Pattern.compile("\\{\\*[^{}]+}");

  private HandlerPolicies() {}

  /**
   * @param mappings the application's handler mappings, looked up when called
   * @param servletPath {@code spring.mvc.servlet.path}, or {@code null} for {@code /}
   * @return the specs, in the order of the mappings and their handlers
   * @throws IdemConfigurationException for an annotated method whose mapping names no request
   *     method, has a pattern the filter cannot match exactly, or a duration that does not parse
   */
  static List<RoutePolicies.Spec> find(Supplier<List<RequestMappingInfoHandlerMapping>> mappings, @Nullable String servletPath) {
    List<RoutePolicies.Spec> specs = new ArrayList<>();
    String prefix = servletPath == null || servletPath.equals("/") ? "" : (servletPath.endsWith("/")
        ? servletPath.substring(0, servletPath.length() - 1) : servletPath);
    List<RequestMappingInfoHandlerMapping> all = mappings.get();
    for (RequestMappingInfoHandlerMapping mapping : all) {
      for (Map.Entry<RequestMappingInfo, HandlerMethod> e : mapping.getHandlerMethods().entrySet()) {
        Method method = e.getValue().getMethod();
        IdempotencyPolicy policy = AnnotatedElementUtils.findMergedAnnotation(method, IdempotencyPolicy.class);
        if (policy == null) {
          continue;
        }
        String source = "@IdempotencyPolicy on " + method.getDeclaringClass().getName() + "." + method.getName();
        Set<RequestMethod> methods = e.getKey().getMethodsCondition().getMethods();
        if (methods.isEmpty()) {
          throw new IdemConfigurationException(source, "its mapping names no request method, so it would take any method,"
              + " GET included: map it with @PostMapping, @PutMapping, @PatchMapping, @DeleteMapping or"
              + " @RequestMapping(method = ...)", null);
        }
        for (RequestMethod requestMethod : new TreeSet<>(methods)) {
          for (String pattern : new TreeSet<>(e.getKey().getPatternValues())) {
            refuseTakingOthers(all, e.getValue(), source, requestMethod.name(), pattern, prefix, filterPattern(source, pattern));
            specs.add(new RoutePolicies.Spec(source, requestMethod.name(), prefix + filterPattern(source, pattern),
                policy.key(), policy.mode(), policy.store(), duration(source, "retention", policy.retention()),
                duration(source, "lease", policy.lease()), inProgress(source, policy.inProgress()),
                duration(source, "maxWait", policy.maxWait())));
          }
        }
      }
    }
    return specs;
  }

  /**
   * Refuses an annotated handler whose route, as the filter matches it, would also take requests
   * that Spring MVC sends to another handler without a policy: {@code /charges/{id}} becomes {@code
   * /charges/*}, which also matches {@code /charges/batch}, a handler of its own that is at least as
   * specific in Spring's terms. That handler would silently run under the annotation's mode and
   * store. (Annotated handlers are ordered most specific first instead, {@link
   * RoutePolicies#mostSpecificFirst}; Spring Boot's error controller is left out, as no client
   * posts to it.)
   *
   * @throws IdemConfigurationException naming both handlers
   */
  private static void refuseTakingOthers(List<RequestMappingInfoHandlerMapping> mappings, HandlerMethod annotated, String source,
      String requestMethod, String springPattern, String prefix, String filterPattern) {
    IdempotencyFilterConfig.Route route = IdempotencyFilterConfig.Route.of(requestMethod, prefix + filterPattern, KeyRequirement.REQUIRED);
    PathPattern own = parsed(springPattern);
    for (RequestMappingInfoHandlerMapping mapping : mappings) {
      for (Map.Entry<RequestMappingInfo, HandlerMethod> other : mapping.getHandlerMethods().entrySet()) {
        HandlerMethod handler = other.getValue();
        if (handler.getMethod().equals(annotated.getMethod())
            || AnnotatedElementUtils.findMergedAnnotation(handler.getMethod(), IdempotencyPolicy.class) != null
            || IdemRouteCheck.isErrorController(handler.getBeanType())) {
          continue;
        }
        Set<RequestMethod> methods = other.getKey().getMethodsCondition().getMethods();
        if (!methods.isEmpty() && methods.stream().noneMatch(m -> m.name().equals(requestMethod))) {
          continue;
        }
        for (String pattern : other.getKey().getPatternValues()) {
          PathPattern theirs = parsed(pattern);
          if (pattern.equals(springPattern) || own == null || theirs == null
              || !route.matches(requestMethod, prefix + (pattern.isEmpty() ? "/" : pattern))
              || PathPattern.SPECIFICITY_COMPARATOR.compare(theirs, own) > 0) {
            continue;
          }
          throw new IdemConfigurationException(source, "its route " + requestMethod + " " + prefix + filterPattern + " (from "
              + springPattern + ") would also take " + requestMethod + " " + prefix + pattern + ", which Spring MVC sends to "
              + handler.getMethod().getDeclaringClass().getName() + "." + handler.getMethod().getName() + " without a policy:"
              + " annotate that handler too, or name the routes in idem.routes.<name>.route", null);
        }
      }
    }
  }

  private static @Nullable PathPattern parsed(String pattern) {
    try {
      return PathPatternParser.defaultInstance.parse(pattern);
    } catch (RuntimeException unparsable) {
      return null;
    }
  }

  /**
   * @return Spring's path pattern as the filter's pattern
   * @throws IdemConfigurationException if a segment is neither literal nor a whole-segment variable
   */
  static String filterPattern(String source, String springPattern) {
    if (springPattern.isEmpty() || springPattern.equals("/")) {
      return "/";
    }
    String[] segments = springPattern.substring(springPattern.startsWith("/") ? 1 : 0).split("/", -1);
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < segments.length; i++) {
      String s = segments[i];
      boolean last = i == segments.length - 1;
      String converted;
      if (LITERAL.matcher(s).matches()) {
        converted = s;
      } else if (s.equals("*") || VARIABLE.matcher(s).matches()) {
        converted = "*";
      } else if (last && (s.equals("**") || CAPTURE_REST.matcher(s).matches())) {
        converted = "**";
      } else {
        throw new IdemConfigurationException(source, "its path pattern " + springPattern + " has the segment '" + s + "', which"
            + " the Idempotency-Key filter cannot match exactly: use whole segments (literal, {name}, or {*name} and ** at"
            + " the end), or name the route in idem.routes.<name>.route", null);
      }
      out.append('/').append(converted);
    }
    return out.toString();
  }

  private static @Nullable Duration duration(String source, String attribute, String value) {
    if (value.isEmpty()) {
      return null;
    }
    try {
      return DurationStyle.detectAndParse(value.trim());
    } catch (IllegalArgumentException e) {
      throw new IdemConfigurationException(source, attribute + " = \"" + value + "\" is not a duration (30s, 48h, PT48H)", e);
    }
  }

  private static IdemProperties.@Nullable InProgress inProgress(String source, String value) {
    if (value.isEmpty()) {
      return null;
    }
    String v = value.trim().toLowerCase(Locale.ROOT).replace('-', '_');
    for (IdemProperties.InProgress p : IdemProperties.InProgress.values()) {
      if (p.name().toLowerCase(Locale.ROOT).equals(v)) {
        return p;
      }
    }
    throw new IdemConfigurationException(source, "inProgress = \"" + value + "\": use \"fail-fast\" or \"wait\"", null);
  }
}
