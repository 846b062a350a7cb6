package dev.idem.spring;

import dev.idem.spring.internal.JsonCodec;
import dev.idem.spring.internal.JsonCodecs;
import org.springframework.context.ConfigurableApplicationContext;

/** For tests in other packages: which Jackson major the starter chose for @Idempotent methods. */
public final class JsonCodecProbe {
  private JsonCodecProbe() {}

  /** {@code "jackson3"}, {@code "jackson2"} or {@code "none"}. */
  public static String name(ConfigurableApplicationContext context) {
    JsonCodec codec = JsonCodecs.choose(context.getBeanFactory());
    return codec == null ? "none" : codec.name();
  }
}
