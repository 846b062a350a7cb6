package dev.idem.spring;

import org.springframework.boot.autoconfigure.AutoConfigurationImportFilter;
import org.springframework.boot.autoconfigure.AutoConfigurationMetadata;

/**
 * Keeps Spring Boot's R2DBC auto-configuration out of the tests' applications that enable
 * auto-configuration over the whole class path: the class path has R2DBC for {@code
 * IdemR2dbcWebFluxTest}, which names that auto-configuration itself, and without {@code
 * spring.r2dbc.url} it would stop every other such application ("no embedded database"). A filter
 * of {@code @EnableAutoConfiguration} only; a context runner's own list is not filtered.
 * Registered in the tests' {@code META-INF/spring.factories}.
 */
public final class WithoutR2dbcAutoConfiguration implements AutoConfigurationImportFilter {

  @Override
  public boolean[] match(String[] autoConfigurationClasses, AutoConfigurationMetadata metadata) {
    boolean[] match = new boolean[autoConfigurationClasses.length];
    for (int i = 0; i < autoConfigurationClasses.length; i++) {
      String name = autoConfigurationClasses[i];
      match[i] = name == null || !name.endsWith(".R2dbcAutoConfiguration");
    }
    return match;
  }
}
