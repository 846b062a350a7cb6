package dev.idem.spring;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The {@link Idempotent} methods of an application's beans, found from the bean definitions' types
 * without creating a bean (on the class, a superclass or an interface). A bean whose type cannot be
 * told, or whose methods cannot be introspected, is passed over: it is not Idem's to judge. Stateless.
 */
final class IdempotentMethods {

  /**
   * One annotated method.
   *
   * @param beanName the bean whose class declares or inherits it
   * @param method the method, as its class declares it
   */
  record Found(String beanName, Method method) {}

  private IdempotentMethods() {}

  /**
   * @param beans the application's bean factory, never {@code null}
   * @return every {@link Idempotent} method of every bean, in the order of the bean definitions
   */
  static List<Found> of(ConfigurableListableBeanFactory beans) {
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
