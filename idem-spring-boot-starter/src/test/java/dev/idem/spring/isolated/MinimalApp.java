package dev.idem.spring.isolated;

import dev.idem.core.spi.LeaseStore;
import dev.idem.spring.Idempotent;
import java.io.Closeable;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.catalina.webresources.TomcatURLStreamHandlerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;
import org.sqlite.SQLiteDataSource;
import redis.clients.jedis.RedisClient;

/**
 * An application as a new user writes it with spring-boot-starter-web, idem-spring-boot-starter and
 * a JDBC driver or Jedis, and nothing else: its DataSource comes from the driver alone (no pool, no
 * spring-jdbc), or its store from a Jedis client. Started by {@code WithoutSpringTxClassPathTest}
 * in a class loader whose class path lacks spring-jdbc and spring-tx; it must not use them.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class MinimalApp {

  /** Counts charges; one per key. */
  public static class Payments {
    private final AtomicInteger charges = new AtomicInteger();

    @Idempotent(operation = "charge")
    public Map<String, Object> charge(@Idempotent.Key String key, String account, long cents) {
      return Map.of("charge", charges.incrementAndGet(), "account", account, "cents", cents);
    }
  }

  @RestController
  static class Api {
    private final Payments payments;
    private final AtomicInteger notes = new AtomicInteger();

    Api(Payments payments) {
      this.payments = payments;
    }

    @PostMapping("/notes")
    ResponseEntity<String> note(@RequestBody String title) {
      return ResponseEntity.status(201).body("{\"id\":" + notes.incrementAndGet() + "}");
    }

    @PostMapping("/charges")
    Map<String, Object> charge(@RequestHeader(name = "Idempotency-Key", required = false) String key, @RequestBody String account) {
      return payments.charge(key, account, 100);
    }
  }

  @Bean
  Payments payments() {
    return new Payments();
  }

  @Bean
  @ConditionalOnProperty(name = "app.store", havingValue = "sqlite")
  DataSource dataSource(Environment env) {
    SQLiteDataSource ds = new SQLiteDataSource();
    ds.setUrl(env.getRequiredProperty("app.sqlite-url"));
    return ds;
  }

  @Bean(destroyMethod = "close")
  @ConditionalOnProperty(name = "app.store", havingValue = "redis")
  RedisClient redis() {
    return RedisClient.builder().hostAndPort("127.0.0.1", 6379).build();
  }

  /**
   * Starts the application (call with this class's loader as the thread's context class loader).
   *
   * @return {@code port} (Integer), {@code context} (Closeable) and {@code store} (the store's class
   *     name): only JDK types, so that a caller in another class loader can read them
   */
  public static Map<String, Object> start(String... args) {
    // Only one URL stream handler factory per JVM: the test JVM's own Tomcat (other tests) keeps it.
    TomcatURLStreamHandlerFactory.disable();
    ConfigurableApplicationContext context = new SpringApplication(MinimalApp.class).run(args);
    int port = context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    return Map.of("port", port, "context", (Closeable) context::close, "store", context.getBean(LeaseStore.class).getClass().getName());
  }
}
