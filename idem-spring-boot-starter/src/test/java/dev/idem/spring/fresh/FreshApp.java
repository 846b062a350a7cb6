package dev.idem.spring.fresh;

import dev.idem.spring.Idempotent;
import dev.idem.spring.JsonCodecProbe;
import java.io.Closeable;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.catalina.webresources.TomcatURLStreamHandlerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * A new Spring Boot application as its user writes it: spring-boot-starter-web,
 * spring-boot-starter-jdbc, a JDBC driver and idem-spring-boot-starter, {@code idem.*} properties,
 * its own controller and service, and no bean for Idem (no DataSource, no transaction manager, no
 * mapper). Started by {@code FreshApplicationTest} in a class loader with only such a class path.
 */
@SpringBootApplication
public class FreshApp {

  /** Orders, written with the application's JdbcTemplate. */
  @RestController
  static class Orders {
    private final JdbcTemplate jdbc;

    Orders(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
      jdbc.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY AUTOINCREMENT, item VARCHAR(100) NOT NULL)");
    }

    @PostMapping("/orders")
    ResponseEntity<String> order(@RequestBody String item) {
      jdbc.update("INSERT INTO orders (item) VALUES (?)", item);
      Long id = jdbc.queryForObject("SELECT MAX(id) FROM orders", Long.class);
      return ResponseEntity.status(201).header("Content-Type", "application/json").body("{\"id\":" + id + "}");
    }
  }

  /** A service method made idempotent by annotation; its result is written as JSON. */
  @Service
  public static class Charges {
    private final AtomicInteger charges = new AtomicInteger();

    @Idempotent(operation = "charge")
    public Map<String, Object> charge(@Idempotent.Key String key, String account) {
      return Map.of("charge", charges.incrementAndGet(), "account", account);
    }
  }

  @RestController
  static class ChargesApi {
    private final Charges charges;

    ChargesApi(Charges charges) {
      this.charges = charges;
    }

    @PostMapping("/charges")
    Map<String, Object> charge(@RequestHeader("Idempotency-Key") String key, @RequestBody String account) {
      return charges.charge(key, account);
    }
  }

  /**
   * Starts the application (call with this class's loader as the thread's context class loader).
   *
   * @return {@code port} (Integer), {@code context} (Closeable), {@code orders} (a Supplier of the
   *     row count) and {@code json} (the Jackson major of @Idempotent methods): only JDK types
   */
  public static Map<String, Object> start(String... args) {
    // Only one URL stream handler factory per JVM: the test JVM's own Tomcat (other tests) keeps it.
    TomcatURLStreamHandlerFactory.disable();
    ConfigurableApplicationContext context = new SpringApplication(FreshApp.class).run(args);
    int port = context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
    return Map.of("port", port, "context", (Closeable) context::close,
        "orders", (Supplier<Integer>) () -> jdbc.queryForObject("SELECT COUNT(*) FROM orders", Integer.class),
        "json", JsonCodecProbe.name(context));
  }
}
