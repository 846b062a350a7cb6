package dev.idem.spring;

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
    for (RequestMappingInfoHandlerMapping mapping : mappings.get()) {
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
