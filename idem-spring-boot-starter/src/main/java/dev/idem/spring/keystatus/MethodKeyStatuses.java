package dev.idem.spring.keystatus;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.Scope;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.servlet.KeyStatusEndpoint;
import dev.idem.spring.Idempotent;
import dev.idem.spring.internal.IdempotentMethods;
import jakarta.servlet.http.HttpServletRequest;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * The key status of {@link Idempotent} methods for {@link KeyStatusEndpoint}: {@code
 * operation=charge} (the annotation's operation, or the method's default one) is read with the
 * principal those methods use, in each store they record keys in (the key table when they join a
 * transaction, the lease store otherwise), the first that knows the key. Was: such a live key was
 * answered 404, the same bytes as a key never sent. The operations are read from the bean
 * definitions once, at the first request. Thread-safe.
 */
final class MethodKeyStatuses implements KeyStatusEndpoint.OtherOperations {

  private final ConfigurableListableBeanFactory beans;
  private final Supplier<@Nullable PrincipalResolver<Object>> principals;
  private final String anonymousPrincipal;
  private final List<KeyStatusReader> readers;
  private volatile @Nullable Set<String> operations;

  /**
   * @param beans where the {@link Idempotent} methods are found
   * @param principals the methods' principal source, looked up at the first request
   * @param anonymousPrincipal the principal of anonymous callers
   * @param readers the stores the methods record keys in, in the order they are asked
   */
  MethodKeyStatuses(ConfigurableListableBeanFactory beans, Supplier<@Nullable PrincipalResolver<Object>> principals, String anonymousPrincipal,
      List<KeyStatusReader> readers) {
    this.beans = beans;
    this.principals = principals;
    this.anonymousPrincipal = anonymousPrincipal;
    this.readers = List.copyOf(readers);
  }

  @Override
  public @Nullable KeyStatus status(HttpServletRequest request, String operation, IdempotencyKey key) {
    if (!operations().contains(operation)) {
      return null;
    }
    PrincipalResolver<Object> resolver = principals.get();
    if (resolver == null) {
      return null;
    }
    Scope scope = Scope.of(Scope.principalPart(resolver.resolve(request), anonymousPrincipal), operation);
    KeyStatus found = KeyStatus.absent();
    for (KeyStatusReader reader : readers) {
      found = reader.status(scope, key);
      if (!(found instanceof KeyStatus.Absent)) {
        return found;
      }
    }
    return found;
  }

  private Set<String> operations() {
    Set<String> known = operations;
    if (known == null) {
      Set<String> found = new LinkedHashSet<>();
      for (IdempotentMethods.Found method : IdempotentMethods.of(beans)) {
        Idempotent annotation = AnnotatedElementUtils.findMergedAnnotation(method.method(), Idempotent.class);
        if (annotation != null) {
          found.add(annotation.operation().isEmpty() ? IdempotentMethods.defaultOperation(method.method()) : annotation.operation());
        }
      }
      known = Set.copyOf(found);
      operations = known;
    }
    return known;
  }
}
