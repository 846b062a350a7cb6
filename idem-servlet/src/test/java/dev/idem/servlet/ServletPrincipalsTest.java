package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.Scope;
import dev.idem.core.spi.PrincipalResolver;
import jakarta.servlet.http.HttpServletRequest;
import java.lang.reflect.Proxy;
import java.security.Principal;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The servlet stack's principal strings, part of every stored key's scope: the filter's default is
 * the container's user name, as {@code PrincipalResolver.userPrincipal()} of {@code
 * dev.idem.servlet} was, and what reaches the scope is {@link Scope#principalPart} of the answer.
 */
class ServletPrincipalsTest {

  private static HttpServletRequest requestOf(@Nullable String user) {
    Principal principal = user == null ? null : () -> user;
    return (HttpServletRequest) Proxy.newProxyInstance(ServletPrincipalsTest.class.getClassLoader(),
        new Class<?>[] {HttpServletRequest.class}, (proxy, method, args) -> {
          if (method.getName().equals("getUserPrincipal")) {
            return principal;
          }
          throw new UnsupportedOperationException(method.getName());
        });
  }

  @Test
  void theDefaultIsTheContainersUserNameAndNoneIsAnonymous() {
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).build();
    PrincipalResolver<? super HttpServletRequest> resolver = config.principalResolver();
    assertThat(resolver).isSameAs(ServletPrincipals.userPrincipal());
    assertThat(resolver.resolve(requestOf("alice"))).isEqualTo("alice");
    assertThat(resolver.resolve(requestOf(null))).isNull();
    assertThat(Scope.principalPart(resolver.resolve(requestOf("alice")), config.anonymousPrincipal())).isEqualTo("alice");
    assertThat(Scope.principalPart(resolver.resolve(requestOf(null)), config.anonymousPrincipal())).isEqualTo("anonymous");
  }

  @Test
  void aResolverForEveryStackIsAcceptedAndCalledWithTheRequest() {
    PrincipalResolver<Object> everyStack = call -> call instanceof HttpServletRequest r && r.getUserPrincipal() != null
        ? "tenant-of-" + r.getUserPrincipal().getName() : null;
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).principalResolver(everyStack).build();
    assertThat(config.principalResolver().resolve(requestOf("bob"))).isEqualTo("tenant-of-bob");
  }
}
