package dev.idem.spring.web;

import static dev.idem.spring.internal.IdemSettings.configured;

import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdempotencyPolicy;
import dev.idem.spring.internal.PolicyEngines;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The routes with a policy of their own ({@code idem.routes.<name>.*} and {@link IdempotencyPolicy}
 * on handler methods): each becomes an {@link IdempotencyFilterConfig.Route} with an engine of its
 * own mode, store, retention, lease and in-progress answer ({@link PolicyEngines}). Used once at
 * start-up; not thread-safe.
 */
final class RoutePolicies {

  /**
   * One route's policy as written, nothing inherited yet.
   *
   * @param source where it was written, for messages ({@code idem.routes.payments}, or the handler
   *     method of an annotation)
   */
  record Spec(String source, String method, String pattern, KeyRequirement key, IdemProperties.Mode mode,
      IdemProperties.StoreType store, @Nullable Duration retention, @Nullable Duration lease,
      IdemProperties.@Nullable InProgress inProgress, @Nullable Duration maxWait) {

    Spec {
      Objects.requireNonNull(source, "source");
      Objects.requireNonNull(method, "method");
      Objects.requireNonNull(pattern, "pattern");
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(mode, "mode");
      Objects.requireNonNull(store, "store");
    }

    /** @return the policy's engine settings, for {@link PolicyEngines} */
    PolicyEngines.Policy policy() {
      return new PolicyEngines.Policy(source, mode, store, retention, lease, inProgress, maxWait);
    }
  }

  private final PolicyEngines engines;

  /** @param engines makes each route's engine */
  RoutePolicies(PolicyEngines engines) {
    this.engines = engines;
  }

  /**
   * The specs in the order the filter tries them: most specific first, segment by segment from the
   * left (a literal segment before {@code *}, {@code *} before {@code **}, a pattern that ends
   * before one that goes on), whatever their source, so that a catch-all never takes the requests
   * of a more specific policy route. Not the order of the {@code idem.routes} map, which Spring
   * Boot builds from its property sources by precedence (an environment variable overriding one
   * entry moves it first), nor that of Spring MVC's handlers, which is a hash map's. Routes of equal
   * rank match no request in common (or are the same route, refused as named twice) and keep
   * their order.
   *
   * @param specs the specs from the properties and the annotations
   * @return a sorted copy
   */
  static List<Spec> mostSpecificFirst(List<Spec> specs) {
    List<Spec> sorted = new ArrayList<>(specs);
    sorted.sort((a, b) -> compareSpecificity(a.pattern(), b.pattern()));
    return sorted;
  }

  /** Negative when {@code a} is to be tried before {@code b}. */
  static int compareSpecificity(String a, String b) {
    String[] as = segments(a);
    String[] bs = segments(b);
    for (int i = 0; i < Math.min(as.length, bs.length); i++) {
      int c = Integer.compare(rank(as[i]), rank(bs[i]));
      if (c != 0) {
        return c;
      }
    }
    return Integer.compare(as.length, bs.length);
  }

  private static String[] segments(String pattern) {
    String p = pattern.startsWith("/") ? pattern.substring(1) : pattern;
    return p.isEmpty() ? new String[0] : p.split("/", -1);
  }

  private static int rank(String segment) {
    return segment.equals("**") ? 2 : segment.equals("*") ? 1 : 0;
  }

  /**
   * @return the specs of {@code idem.routes.*}, in their order
   * @throws IdemConfigurationException for an entry without a route, or a malformed one
   */
  static List<Spec> fromProperties(IdemProperties p) {
    List<Spec> specs = new ArrayList<>();
    for (Map.Entry<String, IdemProperties.RoutePolicy> e : p.getRoutes().entrySet()) {
      String property = "idem.routes." + e.getKey();
      IdemProperties.RoutePolicy r = e.getValue();
      String[] parts = r.getRoute() == null ? new String[0] : r.getRoute().trim().split("\\s+");
      if (parts.length != 2) {
        throw new IdemConfigurationException(property + ".route", "each route policy names its route as \"METHOD /path-pattern\","
            + " e.g. \"POST /payments\"; got " + (r.getRoute() == null ? "nothing" : "\"" + r.getRoute() + "\""), null);
      }
      specs.add(new Spec(property, parts[0].toUpperCase(Locale.ROOT), parts[1], r.getKey(), r.getMode(), r.getStore(),
          r.getRetention(), r.getLease(), r.getInProgress(), r.getMaxWait()));
    }
    return specs;
  }

  /**
   * @param spec a route's policy
   * @return the route with its engine
   * @throws IdemConfigurationException if the policy cannot run here (transactional mode without a
   *     DataSource, a store that is missing, a lease not shorter than the retention, a bad pattern)
   */
  IdempotencyFilterConfig.Route route(Spec spec) {
    IdempotencyFilterConfig.Route route = configured(spec.source(), () -> IdempotencyFilterConfig.Route.of(spec.method(), spec.pattern(), spec.key()));
    PolicyEngines.Built built = engines.engine(spec.policy());
    return route.withEngine(built.engine(), built.reader(), built.words(), built.retention());
  }
}
