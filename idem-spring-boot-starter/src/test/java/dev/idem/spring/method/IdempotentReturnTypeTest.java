package dev.idem.spring.method;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spring.BootLine;
import dev.idem.spring.IdemAutoConfigurationTest;
import dev.idem.spring.IdemUnsupportedException;
import dev.idem.spring.Idempotent;
import dev.idem.spring.internal.IdemUnsupportedFailureAnalyzer;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.reactivestreams.Publisher;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * An {@code @Idempotent} method whose result comes later is refused at start-up, naming the bean,
 * the method and the return type; a synchronous one works as before. Issue 35: a method returning
 * Mono failed on every call ("cannot read the stored JSON as reactor.core.publisher.Mono") without
 * running its effect.
 */
class IdempotentReturnTypeTest {

  private final ApplicationContextRunner methods = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BootLine.withIdem(AopAutoConfiguration.class)))
      .withPropertyValues("idem.principal=shared", "idem.mode=lease");

  private static IdemUnsupportedException refusal(Throwable failure) {
    return (IdemUnsupportedException) IdemAutoConfigurationTest.causeOf(failure, IdemUnsupportedException.class);
  }

  /** Charges the synchronous way: supported. */
  public static class Charges {
    private final AtomicInteger runs = new AtomicInteger();

    @Idempotent(operation = "charge")
    public String charge(@Idempotent.Key String key, long cents) {
      return "charge-" + runs.incrementAndGet() + "-" + cents;
    }

    public int runs() {
      return runs.get();
    }
  }

  /** Issue 35's case: failed on every call, without running the effect. */
  public static class MonoCharges {
    @Idempotent
    public Mono<String> charge(@Idempotent.Key String key, long cents) {
      return Mono.just("charged");
    }
  }

  /** A future's value comes later too. */
  public static class FutureCharges {
    @Idempotent
    public CompletableFuture<String> charge(@Idempotent.Key String key, long cents) {
      return CompletableFuture.completedFuture("charged");
    }
  }

  @Test
  void aMethodReturningMonoIsRefusedAtStartUpNamingTheBeanTheMethodAndTheType() {
    methods.withBean("monoCharges", MonoCharges.class).run(ctx -> {
      assertThat(ctx).hasFailed();
      IdemUnsupportedException e = refusal(ctx.getStartupFailure());
      assertThat(e.getMessage()).contains("bean 'monoCharges'", MonoCharges.class.getName() + ".charge",
          "reactor.core.publisher.Mono<java.lang.String>", "synchronous", "JSON codec");
      assertThat(new IdemUnsupportedFailureAnalyzer().analyze(ctx.getStartupFailure()).getAction())
          .startsWith("Idem supports synchronous @Idempotent methods");
    });
  }

  @Test
  void aMethodReturningCompletableFutureIsRefusedAtStartUp() {
    methods.withBean("futureCharges", FutureCharges.class).run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("bean 'futureCharges'")
          .hasMessageContaining("java.util.concurrent.CompletableFuture<java.lang.String>");
    });
  }

  @Test
  void aSynchronousMethodStillRunsOnceAndReplays() {
    methods.withBean("charges", Charges.class).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      Charges charges = ctx.getBean(Charges.class);
      assertThat(charges.charge("k-1", 500)).isEqualTo("charge-1-500");
      assertThat(charges.charge("k-1", 500)).isEqualTo("charge-1-500");
      assertThat(charges.runs()).isEqualTo(1);
    });
  }

  /** A lazy bean whose type is only known once it is created: the start-up scan cannot see it. */
  @Configuration(proxyBeanMethods = false)
  static class LazyMonoCharges {
    static final AtomicInteger RUNS = new AtomicInteger();

    @Bean
    @Lazy
    Object lazyCharges() {
      return new MonoCharges() {
        @Override
        public Mono<String> charge(String key, long cents) {
          RUNS.incrementAndGet();
          return super.charge(key, cents);
        }
      };
    }
  }

  @Test
  void aCallOfAMethodTheScanCouldNotSeeIsRefusedBeforeItRuns() {
    methods.withUserConfiguration(LazyMonoCharges.class).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      MonoCharges charges = ctx.getBean("lazyCharges", MonoCharges.class);
      assertThatThrownBy(() -> charges.charge("k-1", 500)).isInstanceOf(IdemUnsupportedException.class)
          .hasMessageContaining("@Idempotent method").hasMessageContaining("reactor.core.publisher.Mono<java.lang.String>");
      assertThat(LazyMonoCharges.RUNS).hasValue(0);
    });
  }

  /** Every kind of later result, not only the instance. */
  interface Deferred {
    @Idempotent Mono<String> mono(@Idempotent.Key String key);

    @Idempotent Flux<String> flux(@Idempotent.Key String key);

    @Idempotent CompletionStage<String> stage(@Idempotent.Key String key);

    @Idempotent Future<String> future(@Idempotent.Key String key);

    @Idempotent Publisher<String> publisher(@Idempotent.Key String key);

    @Idempotent java.util.concurrent.Flow.Publisher<String> flowPublisher(@Idempotent.Key String key);

    @Idempotent String value(@Idempotent.Key String key);

    @Idempotent void nothing(@Idempotent.Key String key);

    @Idempotent Object anything(@Idempotent.Key String key);
  }

  @Test
  void eachKindOfLaterResultIsUnsupportedAndSynchronousResultsAreSupported() throws Exception {
    for (String name : new String[] {"mono", "flux", "stage", "future", "publisher", "flowPublisher"}) {
      Method m = Deferred.class.getMethod(name, String.class);
      assertThat(IdempotentReturnTypes.unsupported(m)).as(name).startsWith("returns ").contains("whose value comes later");
    }
    for (String name : new String[] {"value", "nothing", "anything"}) {
      assertThat(IdempotentReturnTypes.unsupported(Deferred.class.getMethod(name, String.class))).as(name).isNull();
    }
  }

  /**
   * A Kotlin suspend function as the JVM sees it, {@code Object charge(String, Continuation)}: Kotlin
   * is not on the test class path, so its {@code Continuation} is a stand-in compiled here, under
   * its name, in a class loader of its own.
   */
  @Test
  void aKotlinSuspendFunctionIsUnsupported(@TempDir Path dir) throws Exception {
    Path continuation = Files.createDirectories(dir.resolve("kotlin/coroutines")).resolve("Continuation.java");
    Files.writeString(continuation, "package kotlin.coroutines; public interface Continuation<T> {}");
    Path charges = Files.createDirectories(dir.resolve("demo")).resolve("SuspendingCharges.java");
    Files.writeString(charges, "package demo; public class SuspendingCharges {"
        + " public Object charge(String key, kotlin.coroutines.Continuation<? super String> completion) { return key; } }");
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertThat(javac.run(null, null, null, "-d", dir.toString(), continuation.toString(), charges.toString())).isZero();
    try (URLClassLoader loader = new URLClassLoader(new URL[] {dir.toUri().toURL()}, getClass().getClassLoader())) {
      Class<?> type = loader.loadClass("demo.SuspendingCharges");
      Method suspend = type.getMethod("charge", String.class, loader.loadClass("kotlin.coroutines.Continuation"));
      assertThat(IdempotentReturnTypes.unsupported(suspend)).contains("Kotlin suspend function", "kotlin.coroutines.Continuation");
      assertThat(IdempotentReturnTypes.refusal("charges", suspend, IdempotentReturnTypes.unsupported(suspend)).getMessage())
          .contains("bean 'charges': @Idempotent method demo.SuspendingCharges.charge is a Kotlin suspend function");
    }
  }
}
