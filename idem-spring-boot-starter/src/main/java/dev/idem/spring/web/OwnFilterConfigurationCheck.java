package dev.idem.spring.web;

import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdemUnsupportedException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;

/**
 * Refuses to start an application whose own filter configuration (an {@code
 * IdempotencyFilterConfig} or {@code IdempotencyWebFilterConfig} bean, or on WebFlux its own {@code
 * IdempotencyWebFilter}) stands in for the starter's while {@code idem.*} route settings are set:
 * the starter builds no configuration then, so those settings would never be read, and a route
 * they name would be protected only as the application's bean says, or not at all. Nothing is
 * silently unprotected: the message names the settings and the two ways out (the routes in the
 * bean, or no bean). It also refuses two of Idem's filters, which an application's own filter
 * declared as a plain {@code WebFilter}, {@code Filter} or {@code FilterRegistrationBean} beside the
 * starter's makes. Runs once every singleton exists; not thread-safe, and needs not be.
 */
final class OwnFilterConfigurationCheck implements SmartInitializingSingleton {

  private final ListableBeanFactory beans;
  private final IdemProperties properties;
  private final String starterBean;
  private final List<Class<?>> ownTypes;
  private final BooleanSupplier annotatedRoutes;
  private final String filterType;
  private final String filterDeclaration;
  private final Supplier<List<String>> idemFilters;

  /**
   * @param beans the application's beans
   * @param properties the {@code idem.*} settings
   * @param starterBean the name of the starter's configuration bean, present when the starter built it
   * @param ownTypes the types whose beans replace the starter's configuration, the configuration's first
   * @param annotatedRoutes whether handler methods carry {@code @IdempotencyPolicy} (Spring MVC), which
   *     only the starter's configuration reads
   * @param filterType the filter's class name, for the message
   * @param filterDeclaration how an application declares its own filter so that the starter's steps aside
   * @param idemFilters the names of the beans that run Idem's filter, read once every singleton exists
   */
  OwnFilterConfigurationCheck(ListableBeanFactory beans, IdemProperties properties, String starterBean, List<Class<?>> ownTypes,
      BooleanSupplier annotatedRoutes, String filterType, String filterDeclaration, Supplier<List<String>> idemFilters) {
    this.beans = Objects.requireNonNull(beans, "beans");
    this.properties = Objects.requireNonNull(properties, "properties");
    this.starterBean = Objects.requireNonNull(starterBean, "starterBean");
    this.ownTypes = List.copyOf(ownTypes);
    this.annotatedRoutes = Objects.requireNonNull(annotatedRoutes, "annotatedRoutes");
    this.filterType = Objects.requireNonNull(filterType, "filterType");
    this.filterDeclaration = Objects.requireNonNull(filterDeclaration, "filterDeclaration");
    this.idemFilters = Objects.requireNonNull(idemFilters, "idemFilters");
  }

  @Override
  public void afterSingletonsInstantiated() {
    // Declared as a plain WebFilter, Filter or FilterRegistrationBean, an application's own filter
    // is not seen by the starter's condition; once it exists its type is known, and two would both
    // run on every request.
    List<String> filters = idemFilters.get();
    if (filters.size() > 1) {
      throw new IdemUnsupportedException(filters.size() + " " + filterType + " beans (" + String.join(", ", filters)
          + ") would all run on every request, the second seeing the first one's claim of the key",
          "Keep one: declare the application's own filter with its type (" + filterDeclaration + "), so that the"
          + " starter's steps aside, or remove it and let the starter build the filter from the idem.* settings");
    }
    if (beans.containsBean(starterBean)) {
      return;
    }
    String own = null;
    for (Class<?> type : ownTypes) {
      if (beans.getBeanNamesForType(type, false, false).length > 0) {
        own = type.getSimpleName();
        break;
      }
    }
    if (own == null) {
      return;
    }
    List<String> unread = unreadSettings(properties, annotatedRoutes.getAsBoolean());
    if (!unread.isEmpty()) {
      throw new IdemUnsupportedException("the application defines its own " + own + ", so the starter builds no filter"
          + " configuration and does not read " + String.join(", ", unread) + ": the routes they name would be protected"
          + " only as that bean says, or not at all",
          "Put those routes into the application's filter configuration (the route methods of "
          + ownTypes.get(0).getSimpleName() + "'s builder) and remove the settings, or remove the bean and let the starter"
          + " build the filter's configuration from the idem.* settings");
    }
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
