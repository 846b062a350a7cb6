package dev.idem.spring.web;

import dev.idem.servlet.OperationNamer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.springframework.http.server.PathContainer;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;

/**
 * Names a key's operation after the Spring MVC handler a request reaches: the most specific path
 * pattern ({@link PathPattern#SPECIFICITY_COMPARATOR}, then the pattern's text) among the {@code @RequestMapping} handlers
 * whose request methods include the request's and whose pattern matches its path, with {@code
 * spring.mvc.servlet.path} in front; {@code null} when none does. Spring MVC's other conditions
 * (parameters, headers, media types) are not weighed: two handlers that differ only by them share
 * one name, which is still one per path template. The handlers are read once, at the first
 * request. Thread-safe.
 */
final class SpringMvcOperationNamer implements OperationNamer {

  private record Handler(Set<String> methods, List<PathPattern> patterns) {}

  private final Supplier<List<RequestMappingInfoHandlerMapping>> mappings;
  private final String servletPrefix;
  private volatile @Nullable List<Handler> handlers;

  /**
   * @param mappings the application's handler mappings, read at the first request
   * @param servletPath {@code spring.mvc.servlet.path}, or {@code null} for {@code /}
   */
  SpringMvcOperationNamer(Supplier<List<RequestMappingInfoHandlerMapping>> mappings, @Nullable String servletPath) {
    this.mappings = mappings;
    this.servletPrefix = servletPath == null || servletPath.equals("/") ? ""
        : servletPath.endsWith("/") ? servletPath.substring(0, servletPath.length() - 1) : servletPath;
  }

  @Override
  public @Nullable String pathTemplate(String method, String path) {
    String inServlet = path;
    if (!servletPrefix.isEmpty()) {
      if (!path.startsWith(servletPrefix + "/")) {
        return null;
      }
      inServlet = path.substring(servletPrefix.length());
    }
    PathContainer container = PathContainer.parsePath(inServlet);
    PathPattern best = null;
    for (Handler h : handlers()) {
      if (!h.methods().isEmpty() && !h.methods().contains(method)) {
        continue;
      }
      for (PathPattern p : h.patterns()) {
        if (p.matches(container) && (best == null || moreSpecific(p, best))) {
          best = p;
        }
      }
    }
    return best == null ? null : servletPrefix + best.getPatternString();
  }

  /**
   * Spring's specificity, then the pattern's text: of two equally specific patterns ({@code /a/{x}}
   * and {@code /{y}/b} for {@code /a/b}) the same one wins whatever order the handlers are read in,
   * which follows a hash map's and differs between instances.
   */
  private static boolean moreSpecific(PathPattern p, PathPattern best) {
    int c = PathPattern.SPECIFICITY_COMPARATOR.compare(p, best);
    return c < 0 || (c == 0 && p.getPatternString().compareTo(best.getPatternString()) < 0);
  }

  private List<Handler> handlers() {
    List<Handler> known = handlers;
    if (known == null) {
      List<Handler> read = new ArrayList<>();
      for (RequestMappingInfoHandlerMapping mapping : mappings.get()) {
        for (Map.Entry<RequestMappingInfo, HandlerMethod> e : mapping.getHandlerMethods().entrySet()) {
          Set<String> methods = e.getKey().getMethodsCondition().getMethods().stream().map(RequestMethod::name)
              .collect(Collectors.toUnmodifiableSet());
          List<PathPattern> patterns = new ArrayList<>();
          for (String value : e.getKey().getPatternValues()) {
            try {
              patterns.add(PathPatternParser.defaultInstance.parse(value));
            } catch (RuntimeException unparsable) {
              // a pattern of another syntax names no operation; the route's name applies
            }
          }
          read.add(new Handler(methods, List.copyOf(patterns)));
        }
      }
      known = List.copyOf(read);
      handlers = known;
    }
    return known;
  }
}
