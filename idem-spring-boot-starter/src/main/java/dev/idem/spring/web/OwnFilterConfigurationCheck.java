package dev.idem.spring.web;

import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdemUnsupportedException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.annotation.AnnotatedBeanDefinition;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.type.MethodMetadata;

/**
 * Refuses, once every singleton exists, two ways in which what the {@code idem.*} settings say
 * would not be what runs (nothing is silently unprotected):
 *
 * <ul>
 *   <li>Route settings ({@code idem.required-key-routes}, {@code idem.optional-key-routes} other
 *       than its default, {@code idem.routes.*}, and on Spring MVC {@code @IdempotencyPolicy}
 *       handlers) while no running filter is on the starter's configuration: the application's
 *       own filter or configuration stands in for it, so the settings would never be read, and a
 *       route they name would be protected only as the application's bean says, or not at all.
 *   <li>The starter's filter and another of Idem's filters both running: an application's own
 *       filter declared in a way the starter's condition does not see (a plain {@code WebFilter},
 *       a {@code Filter} bean, a registration under another name), so both would act on every
 *       request, the second meeting the first one's claim of the key. Two filters of the
 *       application's own, each on routes of its own, are left alone.
 * </ul>
 *
 * <p>Filters are counted once each (a filter bean and its registration are one), and a disabled
 * registration not at all. The message names the settings or the beans and the ways out. Not
 * thread-safe, and needs not be: Spring calls it once.
 */
final class OwnFilterConfigurationCheck implements SmartInitializingSingleton {

  /**
   * What differs between the servlet filter and the WebFlux filter.
   *
   * @param configType the configuration's class
   * @param filterType the filter's class name, for the messages
   * @param starterConfigBean the name of the starter's configuration bean
   * @param starterConfiguration the auto-configuration class that declares that bean
   * @param ownFilterAdvice how an application declares its own filter so that the starter's steps aside
   * @param runningFilters the filters that run, by one bean name each, mapped to their configuration
   *     (or {@code null} where a filter has none yet); distinct filters only, disabled ones left out
   * @param annotatedRoutes whether handler methods carry {@code @IdempotencyPolicy}
   */
  record Stack(Class<?> configType, String filterType, String starterConfigBean, Class<?> starterConfiguration,
      String ownFilterAdvice, Function<ConfigurableListableBeanFactory, Map<String, @Nullable Object>> runningFilters,
      BooleanSupplier annotatedRoutes) {}

  private final ConfigurableListableBeanFactory beans;
  private final IdemProperties properties;
  private final Stack stack;

  /**
   * @param beans the application's beans
   * @param properties the {@code idem.*} settings
   * @param stack the filter's stack
   */
  OwnFilterConfigurationCheck(ConfigurableListableBeanFactory beans, IdemProperties properties, Stack stack) {
    this.beans = Objects.requireNonNull(beans, "beans");
    this.properties = Objects.requireNonNull(properties, "properties");
    this.stack = Objects.requireNonNull(stack, "stack");
  }

  @Override
  public void afterSingletonsInstantiated() {
    Object starterConfig = starterConfig();
    Map<String, @Nullable Object> running = stack.runningFilters().apply(beans);
    List<String> onStarters = new ArrayList<>();
    running.forEach((name, config) -> {
      if (starterConfig != null && config == starterConfig) {
        onStarters.add(name);
      }
    });
    if (!onStarters.isEmpty() && running.size() > 1) {
      throw new IdemUnsupportedException(running.size() + " " + stack.filterType() + " filters ("
          + String.join(", ", running.keySet()) + ") would all run on every request, the starter's ("
          + String.join(", ", onStarters) + ") among them, each after the other meeting the first one's claim of the key",
          "Keep one: declare the application's own filter so that the starter's steps aside (" + stack.ownFilterAdvice()
          + "), or remove it and let the starter build the filter from the idem.* settings");
    }
    boolean own = !running.isEmpty() || ownConfigBean(starterConfig);
    if (onStarters.isEmpty() && own) {
      List<String> unread = unreadSettings(properties, stack.annotatedRoutes().getAsBoolean());
      if (!unread.isEmpty()) {
        throw new IdemUnsupportedException("the application runs its own " + stack.filterType() + " or "
            + stack.configType().getSimpleName() + ", so the starter's filter configuration is not what runs and "
            + String.join(", ", unread) + " would not be read: the routes they configure would be protected only as the"
            + " application's bean says, or not at all",
            "Configure those routes in the application's own " + stack.configType().getSimpleName() + " (its builder) and"
            + " remove them from the settings or the handlers, or remove the application's bean and let the starter build"
            + " the filter from the idem.* settings");
      }
    }
  }

  /** @return the starter's configuration bean, or {@code null} when the starter did not make one */
  private @Nullable Object starterConfig() {
    String name = stack.starterConfigBean();
    if (!beans.containsBeanDefinition(name) || !declaredByTheStarter(beans.getBeanDefinition(name))) {
      return null;
    }
    return beans.getBean(name);
  }

  private boolean declaredByTheStarter(BeanDefinition definition) {
    MethodMetadata method = definition instanceof AnnotatedBeanDefinition annotated ? annotated.getFactoryMethodMetadata() : null;
    return method != null && method.getDeclaringClassName().startsWith(stack.starterConfiguration().getName());
  }

  /** @return whether a configuration bean other than the starter's exists (singletons, no eager init) */
  private boolean ownConfigBean(@Nullable Object starterConfig) {
    for (String name : beans.getBeanNamesForType(stack.configType(), true, false)) {
      if (starterConfig == null || beans.getBean(name) != starterConfig) {
        return true;
      }
    }
    return false;
  }

  /**
   * Keeps the first name of each distinct filter.
   *
   * @param found bean names with their filter and its configuration, in any order
   * @return one name per filter, with its configuration
   */
  static Map<String, @Nullable Object> distinct(List<Map.Entry<String, Object>> found, Function<Object, @Nullable Object> configOf) {
    Map<Object, String> seen = new IdentityHashMap<>();
    Map<String, @Nullable Object> out = new LinkedHashMap<>();
    for (Map.Entry<String, Object> f : found) {
      if (seen.putIfAbsent(f.getValue(), f.getKey()) == null) {
        out.put(f.getKey(), configOf.apply(f.getValue()));
      }
    }
    return out;
  }

  /**
   * @param p the settings
   * @param annotated whether handler methods carry {@code @IdempotencyPolicy}
   * @return the route settings that are set: {@code idem.required-key-routes}, {@code
   *     idem.optional-key-routes} when it is not its default, {@code idem.routes.*}, the annotations
   */
  static List<String> unreadSettings(IdemProperties p, boolean annotated) {
    List<String> set = new ArrayList<>();
    if (!p.getRequiredKeyRoutes().isEmpty()) {
      set.add("idem.required-key-routes");
    }
    if (!p.getOptionalKeyRoutes().equals(new IdemProperties().getOptionalKeyRoutes())) {
      set.add("idem.optional-key-routes");
    }
    if (!p.getRoutes().isEmpty()) {
      set.add("idem.routes.*");
    }
    if (annotated) {
      set.add("@IdempotencyPolicy on handler methods");
    }
    return set;
  }
}
