package dev.idem.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.client.IdempotentHttpClient;
import dev.idem.client.spring.IdempotentExchangeFilter;
import dev.idem.core.IdempotencyEngine;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.jetstream.JetStreamTransport;
import dev.idem.kafka.KafkaIdempotentConsumer;
import dev.idem.outbox.Outbox;
import dev.idem.rabbitmq.RabbitMqTransport;
import dev.idem.redis.RedisLeaseStore;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.spring.Idempotent;
import dev.idem.webflux.IdempotencyWebFilter;
import dev.idem.testkit.LeaseContract;
import java.io.IOException;
import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Every library module's jar names its module on the module path: an {@code Automatic-Module-Name}
 * in its manifest (set from the module's {@code idem.automatic-module-name} property), the root
 * package of its code, and no two of them share a package. The modules with a module-info.java
 * ({@link #DESCRIBED}) export no internal package, and they resolve together with what they require. Reads the jars the build packaged, so it
 * runs in {@code verify} (in {@code test} alone, before anything is packaged, it is skipped).
 */
class ModuleNamesTest {

  /** A class of each library module, by the module name its jar must have. */
  private static final Map<String, Class<?>> LIBRARIES = new LinkedHashMap<>();

  static {
    LIBRARIES.put("dev.idem.core", IdempotencyEngine.class);
    LIBRARIES.put("dev.idem.jdbc", TransactionalIdempotency.class);
    LIBRARIES.put("dev.idem.redis", RedisLeaseStore.class);
    LIBRARIES.put("dev.idem.servlet", IdempotencyFilter.class);
    LIBRARIES.put("dev.idem.webflux", IdempotencyWebFilter.class);
    LIBRARIES.put("dev.idem.r2dbc", dev.idem.r2dbc.R2dbcLeaseStore.class);
    LIBRARIES.put("dev.idem.client", IdempotentHttpClient.class);
    LIBRARIES.put("dev.idem.client.spring", IdempotentExchangeFilter.class);
    LIBRARIES.put("dev.idem.outbox", Outbox.class);
    LIBRARIES.put("dev.idem.rabbitmq", RabbitMqTransport.class);
    LIBRARIES.put("dev.idem.jetstream", JetStreamTransport.class);
    LIBRARIES.put("dev.idem.kafka", KafkaIdempotentConsumer.class);
    LIBRARIES.put("dev.idem.spring", Idempotent.class);
    LIBRARIES.put("dev.idem.testkit", LeaseContract.class);
  }

  /**
   * The library modules with a module-info.java: all but the testkit, a test-scope library of
   * JUnit suites (idem-grpc has one too, but this module does not depend on it). idem-kafka's
   * descriptor requires kafka-clients by the automatic name its file name gives ({@code
   * kafka.clients}, the client has no other), and the starter's requires it too, statically.
   */
  private static final Set<String> DESCRIBED = Set.of("dev.idem.core", "dev.idem.jdbc", "dev.idem.servlet", "dev.idem.webflux",
      "dev.idem.r2dbc",
      "dev.idem.redis", "dev.idem.client", "dev.idem.client.spring", "dev.idem.outbox", "dev.idem.rabbitmq", "dev.idem.jetstream",
      "dev.idem.kafka", "dev.idem.spring");

  @Test
  void everyLibraryJarHasItsAutomaticModuleName() throws IOException {
    for (Map.Entry<String, Class<?>> library : LIBRARIES.entrySet()) {
      Path jar = jarOf(library.getValue());
      try (JarFile file = new JarFile(jar.toFile())) {
        assertThat(file.getManifest().getMainAttributes().getValue("Automatic-Module-Name"))
            .as("Automatic-Module-Name of %s", jar.getFileName())
            .isEqualTo(library.getKey());
      }
      ModuleReference module = ModuleFinder.of(jar).findAll().iterator().next();
      assertThat(module.descriptor().name()).as("module name of %s", jar.getFileName()).isEqualTo(library.getKey());
      assertThat(module.descriptor().isAutomatic())
          .as("%s has a module-info.java: %s", jar.getFileName(), DESCRIBED.contains(library.getKey()))
          .isEqualTo(!DESCRIBED.contains(library.getKey()));
      assertThat(module.descriptor().exports())
          .as("exports of %s: the API and SPI packages, never an internal one", jar.getFileName())
          .allSatisfy(e -> assertThat(e.source()).doesNotContain("internal"));
      assertThat(module.descriptor().packages())
          .as("packages of %s", jar.getFileName())
          .allSatisfy(p -> assertThat(p + ".").startsWith("dev.idem."));
      assertThat(library.getValue().getPackageName()).startsWith(library.getKey());
    }
  }

  @Test
  void theLibraryJarsResolveTogetherOnTheModulePathWithoutASplitPackage() {
    List<Path> jars = new ArrayList<>();
    for (Class<?> type : LIBRARIES.values()) {
      jars.add(jarOf(type));
    }
    // on the JDK's modules; resolution fails (ResolutionException) when two modules hold the same package
    // and the modules the descriptors require that the JDK does not have
    for (Class<?> required : List.of(redis.clients.jedis.UnifiedJedis.class, dev.failsafe.Failsafe.class,
        com.fasterxml.jackson.core.JsonFactory.class, io.r2dbc.spi.ConnectionFactory.class)) {
      jars.add(jarOf(required));
    }
    // the brokers' clients, which idem-rabbitmq's, idem-jetstream's and idem-kafka's descriptors require,
    // and the Spring modules and SLF4J, which the starter's requires (its optional ones are static)
    for (String prefix : List.of("amqp-client-", "jnats-", "kafka-clients-", "spring-boot-", "spring-boot-autoconfigure-",
        "spring-context-", "spring-core-", "spring-beans-", "spring-aop-", "slf4j-api-",
        // and Spring WebFlux and Reactor, which idem-webflux's requires
        "spring-web-", "spring-webflux-", "reactor-core-", "reactive-streams-")) {
      jars.add(onClassPath(prefix));
    }
    // the servlet API's own jar: Tomcat's, also on this class path, holds the same classes
    jars.add(onClassPath("jakarta.servlet-api-"));
    Configuration configuration =
        ModuleLayer.boot().configuration().resolve(ModuleFinder.of(jars.toArray(Path[]::new)), ModuleFinder.of(), LIBRARIES.keySet());
    Set<String> resolved = configuration.modules().stream().map(m -> m.name()).collect(Collectors.toSet());
    assertThat(resolved).containsAll(LIBRARIES.keySet());
    assertThat(resolved.stream().filter(name -> name.startsWith("dev.idem."))).containsExactlyInAnyOrderElementsOf(LIBRARIES.keySet());
  }

  /** The jar of this test's class path whose file name is {@code prefix} and a version. */
  private static Path onClassPath(String prefix) {
    return Stream.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator))
        .map(Path::of)
        .filter(p -> p.getFileName().toString().matches(java.util.regex.Pattern.quote(prefix) + "[0-9][0-9A-Za-z.]*\\.jar"))
        .findFirst()
        .orElseThrow(() -> new AssertionError(prefix + "<version>.jar is not on the test class path"));
  }

  /** The packaged jar of the module that holds {@code type}; skips the test if it is not packaged yet. */
  private static Path jarOf(Class<?> type) {
    Path location;
    try {
      location = Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
    if (Files.isRegularFile(location)) {
      return location;
    }
    // target/classes in a reactor build that stopped before package: the jar beside it, if any
    Path target = location.getParent();
    try (Stream<Path> files = Files.list(target)) {
      List<Path> jars = files
          .filter(f -> f.getFileName().toString().endsWith(".jar"))
          .filter(f -> !f.getFileName().toString().matches(".*-(tests|sources|javadoc)\\.jar"))
          .collect(Collectors.toList());
      Assumptions.assumeTrue(jars.size() == 1, () -> "not packaged yet: " + location);
      return jars.get(0);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
