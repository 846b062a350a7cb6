package dev.idem.spring.method;

import dev.idem.spring.IdemUnsupportedException;
import dev.idem.spring.Idempotent;
import dev.idem.spring.internal.IdempotentMethods;
import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.ReactiveAdapter;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.util.ConcurrentReferenceHashMap;

/**
 * Which {@link Idempotent} methods Idem can protect: a synchronous method, whose return value (or
 * {@code void}) is the result the JSON codec stores and replays; and, where the application has an
 * {@link dev.idem.core.AsyncLeaseIdempotency} bean (a reactive application with idem-webflux), a
 * method returning a {@code Mono}, whose one value is stored ({@link MonoMethods}). Any other
 * method whose result comes later cannot be: Idem would store the {@code Mono}, {@code Flux} or
 * future, not its value, so such a method failed on every call, or ran its effect outside the key.
 * A {@code Flux} is refused everywhere: it may carry any number of values and never end, so its
 * answer could not be stored before all of it had been held; the method collects it itself ({@code
 * collectList()}) into a {@code Mono}, bounded where it knows the bound. Refused, by their names so that
 * no library is needed: any {@code org.reactivestreams.Publisher} ({@code Mono}, {@code Flux},
 * RxJava's {@code Flowable}) or {@code java.util.concurrent.Flow.Publisher}, {@code Future} and
 * {@code CompletionStage} ({@code CompletableFuture}), whatever Spring's {@link
 * ReactiveAdapterRegistry} adapts (RxJava, Mutiny, Kotlin's {@code Flow}), and Kotlin {@code
 * suspend} functions (last parameter a {@code kotlin.coroutines.Continuation}).
 *
 * <p>{@link IdemMethodAutoConfiguration} refuses such a method at start-up, scanning the bean
 * definitions; {@link IdempotentMethodInterceptor} refuses a call of one that escaped the scan (a
 * singleton registered as an instance) before it runs. Stateless apart from a cache of verdicts;
 * thread-safe.
 */
final class IdempotentReturnTypes {

  /** Types whose values, and their subtypes', are results that come later. */
  private static final Set<String> DEFERRED = Set.of(
      "org.reactivestreams.Publisher",
      "java.util.concurrent.Flow$Publisher",
      "java.util.concurrent.Future",
      "java.util.concurrent.CompletionStage",
      "kotlinx.coroutines.flow.Flow",
      "kotlinx.coroutines.Deferred");

  private static final String CONTINUATION = "kotlin.coroutines.Continuation";
  private static final String MONO = "reactor.core.publisher.Mono";
  private static final String FLUX = "reactor.core.publisher.Flux";

  /** What is supported, part of every refusal. */
  static final String SUPPORTED = "Idem supports synchronous @Idempotent methods: the method returns its result (or"
      + " void), and that value, which the JSON codec (Jackson) writes, is stored and replayed. Wait for the asynchronous"
      + " result inside the method and return the value, or remove @Idempotent from the method and guard its callers."
      + " A method returning a Mono is supported where the application has an AsyncLeaseIdempotency bean (a reactive web"
      + " application with idem-webflux, on lease mode); a Flux, which may carry any number of values and never end, is"
      + " not: collect it into a Mono<List<T>> in the method (flux.collectList()) and return that";

  /** Verdicts by method, held weakly (soft references) so that no class loader is kept. */
  private static final Map<Method, String> VERDICTS = new ConcurrentReferenceHashMap<>();
  private static final String SUPPORTED_VERDICT = "";

  private IdempotentReturnTypes() {}

  /**
   * @param method an {@link Idempotent} method, never {@code null}
   * @return why Idem cannot protect it (its return type, or that it is a Kotlin {@code suspend}
   *     function), or {@code null} when it can
   */
  static @Nullable String unsupported(Method method) {
    return unsupported(method, false);
  }

  /**
   * @param method an {@link Idempotent} method, never {@code null}
   * @param monos whether methods returning a {@code Mono} are supported (the application has an
   *     {@link dev.idem.core.AsyncLeaseIdempotency} bean)
   * @return why Idem cannot protect it, or {@code null} when it can
   */
  static @Nullable String unsupported(Method method, boolean monos) {
    if (monos && returnsMono(method)) {
      return null;
    }
    String verdict = VERDICTS.computeIfAbsent(method, IdempotentReturnTypes::judge);
    if (verdict.isEmpty()) {
      return null;
    }
    if (returns(method, FLUX)) {
      return verdict + "; a Flux may carry any number of values and never end, so its answer could not be stored before"
          + " all of it had been held in memory: collect it into a Mono<List<T>> in the method (flux.collectList(), after"
          + " take(n) where you know the bound)" + (monos ? ", which Idem stores and replays" : "");
    }
    if (returnsMono(method)) {
      return verdict + "; a Mono method runs on the non-blocking engine, and this application has no AsyncLeaseIdempotency"
          + " bean (a reactive web application with idem-webflux has one)";
    }
    return verdict;
  }

  /**
   * @param method a method, never {@code null}
   * @return whether it returns Reactor's {@code Mono} (or a subclass), told by name, so that
   *     Reactor need not be on the class path
   */
  static boolean returnsMono(Method method) {
    return returns(method, MONO) && !isSuspend(method);
  }

  private static boolean returns(Method method, String className) {
    for (Class<?> c = method.getReturnType(); c != null; c = c.getSuperclass()) {
      if (c.getName().equals(className)) {
        return true;
      }
    }
    return false;
  }

  private static boolean isSuspend(Method method) {
    Class<?>[] parameters = method.getParameterTypes();
    return parameters.length > 0 && parameters[parameters.length - 1].getName().equals(CONTINUATION);
  }

  private static String judge(Method method) {
    if (isSuspend(method)) {
      return "is a Kotlin suspend function (its last parameter is a " + CONTINUATION + "), whose result comes later";
    }
    Class<?> type = method.getReturnType();
    String deferred = deferredSupertype(type);
    if (deferred == null) {
      try {
        ReactiveAdapter adapter = ReactiveAdapterRegistry.getSharedInstance().getAdapter(type);
        if (adapter != null) {
          deferred = adapter.getReactiveType().getName();
        }
      } catch (RuntimeException | LinkageError e) {
        // a registry that cannot load an optional library has no adapter for it
      }
    }
    if (deferred == null) {
      return SUPPORTED_VERDICT;
    }
    String returned = method.getGenericReturnType().getTypeName();
    return "returns " + returned + (returned.startsWith(deferred) ? "" : " (a " + deferred + ")")
        + ", whose value comes later: Idem would store the " + type.getSimpleName() + " itself, not its value";
  }

  /** @return the name of {@code type} or of a supertype of it in {@link #DEFERRED}, or {@code null} */
  private static @Nullable String deferredSupertype(Class<?> type) {
    Deque<Class<?>> todo = new ArrayDeque<>();
    Set<Class<?>> seen = new HashSet<>();
    todo.add(type);
    while (!todo.isEmpty()) {
      Class<?> c = todo.poll();
      if (c == null || !seen.add(c)) {
        continue;
      }
      if (DEFERRED.contains(c.getName())) {
        return c.getName();
      }
      if (c.getSuperclass() != null) {
        todo.add(c.getSuperclass());
      }
      todo.addAll(Arrays.asList(c.getInterfaces()));
    }
    return null;
  }

  /**
   * @param beanName the bean's name, never {@code null}
   * @param method the refused method, never {@code null}
   * @param why what {@link #unsupported(Method)} said, never {@code null}
   * @return the refusal, naming the bean, the method, its return type and what is supported
   */
  static IdemUnsupportedException refusal(@Nullable String beanName, Method method, String why) {
    return new IdemUnsupportedException((beanName == null ? "" : "bean '" + beanName + "': ") + "@Idempotent method "
        + method.getDeclaringClass().getName() + "." + method.getName() + " " + why, SUPPORTED);
  }

  /**
   * Refuses the first {@link Idempotent} method Idem cannot protect among the beans' classes (on
   * the class, a superclass or an interface); beans are not created to find out.
   *
   * @param beans the application's bean factory, never {@code null}
   * @param monos whether methods returning a {@code Mono} are supported
   * @throws IdemUnsupportedException naming the bean, the method and its return type
   */
  static void check(ConfigurableListableBeanFactory beans, boolean monos) {
    for (IdempotentMethods.Found found : IdempotentMethods.of(beans)) {
      String why = unsupported(found.method(), monos);
      if (why != null) {
        throw refusal(found.beanName(), found.method(), why);
      }
    }
  }
}
