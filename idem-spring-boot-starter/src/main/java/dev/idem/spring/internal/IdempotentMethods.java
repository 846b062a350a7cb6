package dev.idem.spring.internal;

import dev.idem.core.Fingerprint;
import dev.idem.core.Scope;
import dev.idem.spring.Idempotent;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The {@link Idempotent} methods of an application's beans, found from the bean definitions' types
 * without creating a bean (on the class, a superclass or an interface). A bean whose type cannot be
 * told, or whose methods cannot be introspected, is passed over: it is not Idem's to judge. Stateless.
 */
public final class IdempotentMethods {

  /**
   * The default operation of an {@link Idempotent} method without {@code operation}: declaring
   * class, method name and parameter types, such as {@code
   * com.example.Payments.charge(java.lang.String,long)}; {@code "sha256:"} and its SHA-256 when
   * longer than a scope part may be. Stored in every key record of the method: it must not change.
   *
   * @param method the annotated method, never {@code null}
   * @return the operation, never {@code null}
   */
  public static String defaultOperation(Method method) {
    String operation = method.getDeclaringClass().getName() + "." + method.getName()
        + Arrays.stream(method.getParameterTypes()).map(Class::getTypeName).collect(Collectors.joining(",", "(", ")"));
    if (operation.length() > Scope.MAX_PART_LENGTH) {
      return "sha256:" + Fingerprint.ofBytes(operation.getBytes(StandardCharsets.UTF_8)).hex();
    }
    return operation;
  }

  /**
   * One annotated method.
   *
   * @param beanName the bean whose class declares or inherits it
   * @param method the method, as its class declares it
   */
  public record Found(String beanName, Method method) {}

  private IdempotentMethods() {}

  /**
   * @param beans the application's bean factory, never {@code null}
   * @return every {@link Idempotent} method of every bean, in the order of the bean definitions
   */
  public static List<Found> of(ConfigurableListableBeanFactory beans) {
    List<Found> found = new ArrayList<>();
    for (String name : beans.getBeanDefinitionNames()) {
      Class<?> type;
      try {
        type = beans.getType(name, false);
      } catch (RuntimeException | LinkageError e) {
        continue;
      }
      if (type == null) {
        continue;
      }
      Method[] methods;
      try {
        methods = ReflectionUtils.getUniqueDeclaredMethods(ClassUtils.getUserClass(type), ReflectionUtils.USER_DECLARED_METHODS);
      } catch (RuntimeException | LinkageError e) {
        continue;
      }
      for (Method m : methods) {
        if (AnnotatedElementUtils.hasAnnotation(m, Idempotent.class)) {
          found.add(new Found(name, m));
        }
      }
    }
    return found;
  }
}
