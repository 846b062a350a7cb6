package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
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

  private static final String KAFKA = "dev.idem.spring.IdemKafkaAutoConfiguration";

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
