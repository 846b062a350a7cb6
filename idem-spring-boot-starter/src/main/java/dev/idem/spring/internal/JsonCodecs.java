package dev.idem.spring.internal;

import dev.idem.spring.Idempotent;
import dev.idem.spring.method.IdemMethodAutoConfiguration;
import java.util.Comparator;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ListableBeanFactory;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Chooses the {@link JsonCodec} of {@link Idempotent} methods when the first one is called, after
 * every bean definition is known (so no auto-configuration order matters), among the {@link
 * Candidate}s that {@link IdemMethodAutoConfiguration} registers for each Jackson major on the class
 * path (its {@code @ConditionalOnClass} checks decide, not a lookup here):
 *
 * <ol>
 *   <li>Jackson 3 with the application's {@code tools.jackson.databind.json.JsonMapper} bean (what
 *       Spring Boot 4 configures);
 *   <li>Jackson 2 with the application's {@code com.fasterxml.jackson.databind.ObjectMapper} bean
 *       (what Spring Boot 3 configures);
 *   <li>else a default mapper of Jackson 3, or of Jackson 2, whichever is on the class path.
 * </ol>
 *
 * Each Jackson major is touched only from its candidate class, created only by a configuration
 * guarded by that major's presence, so either may be missing. Neither present: no candidate, and
 * the application refuses to start if it has {@link Idempotent} methods ({@link #NO_JACKSON}).
 */
public final class JsonCodecs {

  public static final String JACKSON_3 = "tools.jackson.databind.json.JsonMapper";
  public static final String JACKSON_2 = "com.fasterxml.jackson.databind.ObjectMapper";

  public static final String NO_JACKSON = "@Idempotent methods write their arguments and results as JSON and need Jackson 3"
      + " (tools.jackson.core:jackson-databind, which spring-boot-starter-jackson brings on Spring Boot 4) or Jackson 2"
      + " (com.fasterxml.jackson.core:jackson-databind, which spring-boot-starter-json brings on Spring Boot 3) on the class path,"
      + " and neither is there";

  private JsonCodecs() {}

  /** One Jackson major on the class path; a bean of {@link IdemMethodAutoConfiguration}'s. */
  public interface Candidate {
    /** @return the major version, 3 or 2: the higher is preferred */
    int major();

    /** @return a codec on the application's own mapper bean, or {@code null} if it has none */
    @Nullable JsonCodec ofApplication(ListableBeanFactory beans);

    /** @return a codec on a default mapper, never {@code null} */
    JsonCodec standalone();
  }

  /** @return whether any Jackson major is on the class path (any candidate is registered) */
  public static boolean jacksonPresent(ListableBeanFactory beans) {
    return beans.getBeanProvider(Candidate.class).stream().findAny().isPresent();
  }

  /**
   * @param beans the application's beans: its candidates and its mapper
   * @return the codec, or {@code null} when neither Jackson 3 nor Jackson 2 is on the class path
   */
  public static @Nullable JsonCodec choose(ListableBeanFactory beans) {
    List<Candidate> candidates = beans.getBeanProvider(Candidate.class).stream()
        .sorted(Comparator.comparingInt(Candidate::major).reversed()).toList();
    for (Candidate c : candidates) {
      JsonCodec application = c.ofApplication(beans);
      if (application != null) {
        return application;
      }
    }
    return candidates.isEmpty() ? null : candidates.get(0).standalone();
  }

  /** Created only when Jackson 3 is present. */
  public static final class Jackson3 implements Candidate {
    @Override
    public int major() {
      return 3;
    }

    @Override
    public @Nullable JsonCodec ofApplication(ListableBeanFactory beans) {
      ObjectMapper mapper = beans.getBeanProvider(JsonMapper.class).getIfUnique();
      if (mapper == null) {
        mapper = beans.getBeanProvider(ObjectMapper.class).getIfUnique();
      }
      return mapper == null ? null : new Jackson3JsonCodec(mapper);
    }

    @Override
    public JsonCodec standalone() {
      return new Jackson3JsonCodec(JsonMapper.builder().build());
    }
  }

  /** Created only when Jackson 2 is present. */
  public static final class Jackson2 implements Candidate {
    @Override
    public int major() {
      return 2;
    }

    @Override
    public @Nullable JsonCodec ofApplication(ListableBeanFactory beans) {
      com.fasterxml.jackson.databind.ObjectMapper mapper = beans.getBeanProvider(com.fasterxml.jackson.databind.ObjectMapper.class).getIfUnique();
      return mapper == null ? null : new Jackson2JsonCodec(mapper);
    }

    @Override
    public JsonCodec standalone() {
      return new Jackson2JsonCodec(new com.fasterxml.jackson.databind.ObjectMapper());
    }
  }
}
