package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.json.JsonMapper;

/**
 * The JSON of @Idempotent methods with either Jackson major, or both, on the class path: the starter
 * never makes the application bring the other one. Runs on Spring Boot 3.5 and 4.x (both Jackson
 * majors are on the test class path of each; FilteredClassLoader hides one).
 */
class JsonCodecTest {

  private static ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(AopAutoConfiguration.class)))
        .withUserConfiguration(IdemAutoConfigurationTest.PaymentsConfig.class)
        .withPropertyValues("idem.principal=shared");
  }

  private static void replays(ConfigurableApplicationContext ctx) {
    IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
    Map<String, Object> first = payments.charge("json-1", "acct-1", 250);
    Map<String, Object> again = payments.charge("json-1", "acct-1", 250);
    assertThat(again).isEqualTo(first);
    assertThat(payments.charges()).isEqualTo(1);
  }

  @Test
  void withOnlyJackson2TheMethodsUseJackson2() {
    runner().withClassLoader(new FilteredClassLoader("tools.jackson")).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(JsonCodecProbe.name(ctx)).isEqualTo("jackson2");
      replays(ctx);
    });
  }

  @Test
  void withOnlyJackson3TheMethodsUseJackson3() {
    runner().withClassLoader(new FilteredClassLoader("com.fasterxml.jackson.databind")).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(JsonCodecProbe.name(ctx)).isEqualTo("jackson3");
      replays(ctx);
    });
  }

  @Test
  void withNeitherJacksonAnApplicationWithIdempotentMethodsRefusesToStartNamingBoth() {
    runner().withClassLoader(new FilteredClassLoader("tools.jackson", "com.fasterxml.jackson.databind")).run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).hasMessageContaining("need Jackson 3")
          .hasMessageContaining("or Jackson 2").hasMessageContaining("bean 'payments'");
    });
  }

  @Configuration(proxyBeanMethods = false)
  static class Jackson2Mapper {
    @Bean
    ObjectMapper objectMapper() {
      return new ObjectMapper();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Jackson3Mapper {
    @Bean
    JsonMapper jsonMapper() {
      return JsonMapper.builder().build();
    }
  }

  /** A Spring Boot 3 application that has Jackson 3 on its class path too keeps its own ObjectMapper. */
  @Test
  void theApplicationsJackson2MapperWinsOverJackson3OnTheClassPath() {
    runner().withUserConfiguration(Jackson2Mapper.class).run(ctx -> {
      assertThat(JsonCodecProbe.name(ctx)).isEqualTo("jackson2");
      replays(ctx);
    });
  }

  @Test
  void theApplicationsJackson3MapperWinsOverItsJackson2Mapper() {
    runner().withUserConfiguration(Jackson2Mapper.class, Jackson3Mapper.class).run(ctx -> {
      assertThat(JsonCodecProbe.name(ctx)).isEqualTo("jackson3");
      replays(ctx);
    });
  }

  @Test
  void withoutAMapperBeanJackson3IsPreferred() {
    runner().run(ctx -> assertThat(JsonCodecProbe.name(ctx)).isEqualTo("jackson3"));
  }
}
