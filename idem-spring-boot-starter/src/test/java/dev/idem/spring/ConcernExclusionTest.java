package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.LeaseStore;
import dev.idem.spring.store.IdemLeaseAutoConfiguration;
import dev.idem.spring.store.IdemStoreAutoConfiguration;
import java.lang.reflect.Modifier;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;

/**
 * Each concern of the starter is an auto-configuration of its own, so that an application can
 * exclude one ({@code spring.autoconfigure.exclude}) and keep the rest; before, the starter had one
 * auto-configuration that imported them all, and excluding it was all or nothing.
 */
class ConcernExclusionTest {

  private static final String KAFKA = "dev.idem.spring.kafka.IdemKafkaAutoConfiguration";

  /** An application as its user writes it: every auto-configuration on the class path. */
  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {}

  private static ApplicationContextRunner application() {
    return new ApplicationContextRunner().withUserConfiguration(App.class)
        .withPropertyValues("idem.mode=lease", "idem.principal=shared", "spring.grpc.server.port=0");
  }

  @Test
  void everyConcernIsListedInTheAutoConfigurationImports() {
    List<String> names = BootLine.idem().stream().map(Class::getName).toList();
    assertThat(names).startsWith("dev.idem.spring.IdemAutoConfiguration").contains(KAFKA)
        .hasSizeGreaterThanOrEqualTo(16).doesNotHaveDuplicates();
  }

  @Test
  void eachConcernIsAPublicAutoConfigurationInAPackageOfItsOwn() {
    List<Class<?>> concerns = BootLine.idem().stream().filter(c -> c != IdemAutoConfiguration.class).toList();
    assertThat(concerns).hasSizeGreaterThanOrEqualTo(16);
    for (Class<?> concern : concerns) {
      assertThat(Modifier.isPublic(concern.getModifiers())).as("%s is public, so that exclude= can name it", concern).isTrue();
      assertThat(concern.getPackageName()).as("package of %s", concern.getName())
          .startsWith("dev.idem.spring.").isNotEqualTo("dev.idem.spring.internal");
    }
    // one package per concern; the store concern has three auto-configurations (the store, the lease engine on it, and
    // the non-blocking Redis store of a WebFlux application), the web concern two (the servlet filter, and the
    // reactive web application's filter or refusal)
    Map<String, List<String>> byPackage = concerns.stream()
        .collect(Collectors.groupingBy(Class::getPackageName, Collectors.mapping(Class::getSimpleName, Collectors.toList())));
    assertThat(byPackage).hasSize(concerns.size() - 3);
    assertThat(byPackage.get("dev.idem.spring.store"))
        .containsExactlyInAnyOrder("IdemStoreAutoConfiguration", "IdemLeaseAutoConfiguration", "IdemAsyncRedisStoreAutoConfiguration");
    assertThat(byPackage.get("dev.idem.spring.web"))
        .containsExactlyInAnyOrder("IdemWebAutoConfiguration", "IdemReactiveWebAutoConfiguration");
  }

  @Test
  void anApplicationThatExcludesAnyOneConcernStillStarts() {
    for (Class<?> concern : BootLine.idem()) {
      if (concern == IdemAutoConfiguration.class) {
        continue;
      }
      ApplicationContextRunner runner = application().withPropertyValues("spring.autoconfigure.exclude=" + concern.getName());
      if (concern == IdemStoreAutoConfiguration.class) {
        // the others build on the store: an application that excludes it brings its own
        runner = runner.withBean(LeaseStore.class, () -> new InMemoryLeaseStore());
      }
      if (concern == IdemLeaseAutoConfiguration.class) {
        // and on the lease engine: likewise
        runner = runner.withBean(LeaseIdempotency.class, () -> LeaseIdempotency.builder(new InMemoryLeaseStore()).build());
      }
      runner.run(ctx -> {
        assertThat(ctx).as("without %s", concern.getName()).hasNotFailed();
        assertThat(ctx.getBeanNamesForType(concern)).as(concern.getName()).isEmpty();
      });
    }
  }

  @Test
  void anApplicationThatExcludesTheKafkaConcernStartsWithoutItsBeansAndWithTheOthers() {
    application().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.containsBean("idemKafkaListeners")).isTrue();
      assertThat(ctx.containsBean("idemKafkaContainers")).isTrue();
    });
    application().withPropertyValues("spring.autoconfigure.exclude=" + KAFKA).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.containsBean("idemKafkaListeners")).isFalse();
      assertThat(ctx.containsBean("idemKafkaContainers")).isFalse();
      assertThat(ctx.containsBean("idemLeaseIdempotency")).isTrue();
      assertThat(ctx.containsBean("idemLeaseStore")).isTrue();
      assertThat(ctx.containsBean("idemRabbitListeners")).isTrue();
      assertThat(ctx.containsBean("idemRabbitContainers")).isTrue();
    });
  }

  @Test
  void withoutTheKafkaConcernTheOthersStart() {
    List<Class<?>> others = BootLine.idem().stream().filter(c -> !c.getName().equals(KAFKA)).toList();
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.plus(BootLine.jdbc(), others.toArray(Class<?>[]::new))))
        .withPropertyValues("spring.datasource.url=jdbc:h2:mem:concerns", "idem.principal=shared")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.containsBean("idemKafkaListeners")).isFalse();
          assertThat(ctx.containsBean("idemJdbcIdempotency")).isTrue();
          assertThat(ctx.containsBean("idemLeaseIdempotency")).isTrue();
          assertThat(ctx.containsBean("idemRabbitListeners")).isTrue();
          assertThat(ctx.containsBean("idemOutbox")).isTrue();
        });
  }

  @Test
  void excludingTheCoreOrDisablingIdemSwitchesEveryConcernOff() {
    for (String off : new String[] {"idem.enabled=false", "spring.autoconfigure.exclude=dev.idem.spring.IdemAutoConfiguration"}) {
      application().withPropertyValues(off).run(ctx -> {
        assertThat(ctx).hasNotFailed();
        assertThat(ctx.getBeanNamesForType(IdemProperties.class)).isEmpty();
        assertThat(ctx.containsBean("idemKafkaListeners")).isFalse();
        assertThat(ctx.containsBean("idemRabbitListeners")).isFalse();
        assertThat(ctx.containsBean("idemLeaseStore")).isFalse();
        for (Class<?> concern : BootLine.idem()) {
          assertThat(ctx.getBeanNamesForType(concern)).as(concern.getName()).isEmpty();
        }
      });
    }
  }
}
