package dev.idem.spring;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.util.ClassUtils;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Chooses the {@link JsonCodec} of {@link Idempotent} methods when the first one is called, after
 * every bean definition is known (so no auto-configuration order matters):
 *
 * <ol>
 *   <li>Jackson 3 with the application's {@code tools.jackson.databind.json.JsonMapper} bean (what
 *       Spring Boot 4 configures);
 *   <li>Jackson 2 with the application's {@code com.fasterxml.jackson.databind.ObjectMapper} bean
 *       (what Spring Boot 3 configures);
 *   <li>else a default mapper of Jackson 3, or of Jackson 2, whichever is on the class path.
 * </ol>
 *
 * Each Jackson major is touched only from a nested class loaded after its presence was checked by
 * name, so either may be missing. Neither present: {@code null}, and the application refuses to
 * start if it has {@link Idempotent} methods ({@link #NO_JACKSON}).
 */
final class JsonCodecs {

  static final String JACKSON_3 = "tools.jackson.databind.json.JsonMapper";
  static final String JACKSON_2 = "com.fasterxml.jackson.databind.ObjectMapper";

  static final String NO_JACKSON = "@Idempotent methods write their arguments and results as JSON and need Jackson 3"
      + " (tools.jackson.core:jackson-databind, which spring-boot-starter-jackson brings on Spring Boot 4) or Jackson 2"
      + " (com.fasterxml.jackson.core:jackson-databind, which spring-boot-starter-json brings on Spring Boot 3) on the class path,"
      + " and neither is there";

  private JsonCodecs() {}

  static boolean jacksonPresent(ClassLoader loader) {
    return ClassUtils.isPresent(JACKSON_3, loader) || ClassUtils.isPresent(JACKSON_2, loader);
  }

  /**
   * @param beans the application's beans, to find its mapper
   * @param loader the application's class loader
   * @return the codec, or {@code null} when neither Jackson 3 nor Jackson 2 is on the class path
   */
  static JsonCodec choose(ListableBeanFactory beans, ClassLoader loader) {
    boolean jackson3 = ClassUtils.isPresent(JACKSON_3, loader);
    boolean jackson2 = ClassUtils.isPresent(JACKSON_2, loader);
    if (jackson3) {
      JsonCodec application = Jackson3.ofApplication(beans);
      if (application != null) {
        return application;
      }
    }
    if (jackson2) {
      JsonCodec application = Jackson2.ofApplication(beans);
      if (application != null) {
        return application;
      }
    }
    if (jackson3) {
      return Jackson3.standalone();
    }
    return jackson2 ? Jackson2.standalone() : null;
  }

  /** Loaded only when Jackson 3 is present. */
  private static final class Jackson3 {
    static JsonCodec ofApplication(ListableBeanFactory beans) {
      ObjectMapper mapper = beans.getBeanProvider(JsonMapper.class).getIfUnique();
      if (mapper == null) {
        mapper = beans.getBeanProvider(ObjectMapper.class).getIfUnique();
      }
      return mapper == null ? null : new Jackson3JsonCodec(mapper);
    }

    static JsonCodec standalone() {
      return new Jackson3JsonCodec(JsonMapper.builder().build());
    }
  }

  /** Loaded only when Jackson 2 is present. */
  private static final class Jackson2 {
    static JsonCodec ofApplication(ListableBeanFactory beans) {
      com.fasterxml.jackson.databind.ObjectMapper mapper = beans.getBeanProvider(com.fasterxml.jackson.databind.ObjectMapper.class).getIfUnique();
      return mapper == null ? null : new Jackson2JsonCodec(mapper);
    }

    static JsonCodec standalone() {
      return new Jackson2JsonCodec(new com.fasterxml.jackson.databind.ObjectMapper());
    }
  }
}
