package dev.idem.spring;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.springframework.util.ClassUtils;

/**
 * The Spring Boot auto-configurations these tests start, by name on both lines: Spring Boot 4 moved
 * them into modules with new packages. The same test sources run on Spring Boot 3.5 (this module)
 * and on 4.x (idem-spring-boot4-tests).
 */
public final class BootLine {

  private BootLine() {}

  /** {@code true} on Spring Boot 4.x, {@code false} on 3.x. */
  public static final boolean BOOT_4 = ClassUtils.isPresent(
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration", BootLine.class.getClassLoader());

  /** DataSource, its transaction manager, Spring's transaction support and JdbcTemplate. */
  public static Class<?>[] jdbc() {
    return Arrays.stream(BOOT_4
        ? new String[] {
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
            "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
            "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
            "org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration"}
        : new String[] {
            "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
            "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
            "org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration",
            "org.springframework.boot.autoconfigure.jdbc.JdbcTemplateAutoConfiguration"})
        .map(BootLine::load).toArray(Class<?>[]::new);
  }

  /** Spring Data Redis: the connection factory from spring.data.redis.* (Lettuce or Jedis), and its templates. */
  public static Class<?>[] redis() {
    return new Class<?>[] {load(BOOT_4
        ? "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration"
        : "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration")};
  }

  /**
   * @return Spring Boot's R2DBC auto-configurations on this Boot line: the ConnectionFactory from
   *     spring.r2dbc.*, and its R2dbcTransactionManager
   */
  public static Class<?>[] r2dbc() {
    String base = BOOT_4 ? "org.springframework.boot.r2dbc.autoconfigure." : "org.springframework.boot.autoconfigure.r2dbc.";
    return new Class<?>[] {load(base + "R2dbcAutoConfiguration"), load(base + "R2dbcTransactionManagerAutoConfiguration")};
  }

  /**
   * {@code classes} followed by Idem's auto-configurations: each concern is one, all listed in the
   * starter's {@code AutoConfiguration.imports}, read from there so that a test starts what an
   * application gets.
   */
  public static Class<?>[] withIdem(Class<?>... classes) {
    return plus(classes, idem().toArray(Class<?>[]::new));
  }

  /** Idem's auto-configurations, in the order of the starter's {@code AutoConfiguration.imports}. */
  public static List<Class<?>> idem() {
    String file = "META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports";
    Set<Class<?>> found = new LinkedHashSet<>();
    try {
      for (URL url : Collections.list(BootLine.class.getClassLoader().getResources(file))) {
        try (InputStream in = url.openStream()) {
          for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
            if (line.trim().startsWith("dev.idem.")) {
              found.add(load(line.trim()));
            }
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return List.copyOf(found);
  }

  /** {@code classes} followed by {@code more}. */
  public static Class<?>[] plus(Class<?>[] classes, Class<?>... more) {
    Class<?>[] all = Arrays.copyOf(classes, classes.length + more.length);
    System.arraycopy(more, 0, all, classes.length, more.length);
    return all;
  }

  private static Class<?> load(String name) {
    try {
      return ClassUtils.forName(name, BootLine.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException(name + " is not on the test class path", e);
    }
  }
}
