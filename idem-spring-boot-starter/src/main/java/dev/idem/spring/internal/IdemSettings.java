package dev.idem.spring.internal;

import dev.idem.core.InProgressPolicy;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.Idempotent;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * The {@code idem.*} values that more than one of the starter's configurations reads, checked the
 * same way everywhere: a value an Idem builder refuses stops the start-up with {@link
 * IdemConfigurationException}, naming the property. Stateless.
 */
public final class IdemSettings {

  private IdemSettings() {}

  /**
   * @param property the property the value comes from, named in the refusal
   * @param build builds (or checks) with the value; an {@link IllegalArgumentException} or {@link
   *     NullPointerException} from it is the property's fault
   * @return what {@code build} returned
   * @throws IdemConfigurationException if {@code build} refused the value
   */
  public static <T> T configured(String property, Supplier<T> build) {
    try {
      return build.get();
    } catch (IllegalArgumentException | NullPointerException e) {
      throw new IdemConfigurationException(property, e.getMessage(), e);
    }
  }

  /**
   * One entry of {@code idem.required-key-routes} or {@code idem.optional-key-routes}, for the
   * servlet filter and the WebFlux filter alike.
   *
   * @return the method (upper case) and the path pattern
   * @throws IdemConfigurationException ({@code property}) unless it is {@code "METHOD /path-pattern"}
   */
  public static String[] route(String property, String route) {
    String[] parts = route == null ? new String[0] : route.trim().split("\\s+");
    if (parts.length != 2) {
      throw new IdemConfigurationException(property, "each route is \"METHOD /path-pattern\", e.g. \"POST /notes\"; got \"" + route + "\"", null);
    }
    parts[0] = parts[0].toUpperCase(Locale.ROOT);
    return parts;
  }

  /** @return {@code idem.in-progress} and {@code idem.max-wait}, for both modes */
  public static InProgressPolicy inProgressPolicy(IdemProperties p) {
    return p.getInProgress() == IdemProperties.InProgress.WAIT
        ? configured("idem.max-wait", () -> InProgressPolicy.waitUpTo(p.getMaxWait()))
        : InProgressPolicy.failFast();
  }

  /** {@code idem.max-response-size} in bytes, for the filter and for {@link Idempotent} methods. */
  public static int maxResponseBytes(IdemProperties p) {
    return configured("idem.max-response-size", () -> {
      if (p.getMaxResponseSize() == null) {
        throw new IllegalArgumentException("must be set, between 0B and 64MB");
      }
      long bytes = p.getMaxResponseSize().toBytes();
      if (bytes < 0 || bytes > IdempotencyFilterConfig.MAX_RESPONSE_BYTES_LIMIT) {
        throw new IllegalArgumentException("must be between 0B and 64MB, was " + p.getMaxResponseSize());
      }
      return (int) bytes;
    });
  }

  /** @return the store in words for the start-up log line */
  public static String describe(dev.idem.core.spi.@org.jspecify.annotations.Nullable LeaseStore store) {
    dev.idem.core.spi.LeaseStore s = store instanceof TimedLeaseStore timed ? timed.delegate() : store;
    if (s == null) {
      return "no store";
    }
    if (s instanceof dev.idem.core.InMemoryLeaseStore) {
      return "memory (lost on restart, not shared between instances)";
    }
    return s.getClass().getSimpleName();
  }
}
