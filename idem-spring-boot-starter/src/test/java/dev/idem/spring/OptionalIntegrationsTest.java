package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The optional integrations (springdoc-openapi, Spring gRPC with idem-grpc) are configured only
 * when their libraries are on the class path, and an application without them starts as before.
 */
class OptionalIntegrationsTest {

  @TempDir Path dir;

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db"), "idem.principal=shared");
  }

  @Test
  void withoutSpringdocThereIsNoOpenApiCustomizerAndTheApplicationStarts() {
    app().withClassLoader(new FilteredClassLoader("org.springdoc", "io.swagger"))
        .run(ctx -> assertThat(ctx).hasNotFailed().doesNotHaveBean("idemOpenApi"));
  }

  @Test
  void withoutSpringGrpcThereIsNoServerInterceptorAndTheApplicationStarts() {
    app().withClassLoader(new FilteredClassLoader("org.springframework.grpc", "dev.idem.grpc", "io.grpc"))
        .run(ctx -> assertThat(ctx).hasNotFailed().doesNotHaveBean("idemGrpcServerInterceptor"));
  }

  /**
   * Was: with Spring gRPC and idem-grpc on the class path the interceptor was made in every
   * application, gRPC server or not, and its principal rules refused applications that have no gRPC
   * service (idem.principal=servlet, or no principal source at all).
   */
  @Test
  void withSpringGrpcOnTheClassPathButNoServiceThereIsNoInterceptorAndNoRefusal() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("servlet.db"), "idem.principal=servlet")
        .run(ctx -> assertThat(ctx).hasNotFailed().doesNotHaveBean("idemGrpcServerInterceptor"));
  }
}
