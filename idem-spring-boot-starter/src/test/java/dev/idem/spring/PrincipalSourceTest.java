package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.Scope;
import dev.idem.core.spi.LeaseStore;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.internal.IdempotentMethods;
import dev.idem.spring.internal.TimedLeaseStore;
import jakarta.servlet.http.HttpServletRequest;
import java.lang.reflect.Proxy;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.aop.framework.autoproxy.DefaultAdvisorAutoProxyCreator;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.security.authentication.AnonymousAuthenticationToken;
import org.springframework.security.authentication.TestingAuthenticationToken;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.core.context.SecurityContextHolder;

/**
 * Where the principal of a key's scope comes from, and what happens without any source: the
 * application refuses to start rather than put every caller in one scope.
 */
class PrincipalSourceTest {

  static final FilteredClassLoader WITHOUT_SPRING_SECURITY = new FilteredClassLoader("org.springframework.security");

  @Configuration(proxyBeanMethods = false)
  static class Payments {
    @Bean
    IdemAutoConfigurationTest.Payments payments() {
      return new IdemAutoConfigurationTest.Payments();
    }
  }

  private static ApplicationContextRunner methods() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(AopAutoConfiguration.class)))
        .withUserConfiguration(Payments.class);
  }

  private static WebApplicationContextRunner web() {
    return new WebApplicationContextRunner().withConfiguration(AutoConfigurations.of(BootLine.withIdem()));
  }

  @AfterEach
  void clear() {
    SecurityContextHolder.clearContext();
  }

  private static void as(String user) {
    SecurityContextHolder.getContext().setAuthentication(
        UsernamePasswordAuthenticationToken.authenticated(user, "n/a", AuthorityUtils.createAuthorityList("ROLE_USER")));
  }

  @Test
  void idempotentMethodsWithoutSpringSecurityOrAResolverWereAllScopedToOneSharedPrincipal() {
    methods().withClassLoader(WITHOUT_SPRING_SECURITY).run(ctx -> {
      assertThat(ctx).hasFailed();
      IdemConfigurationException e = (IdemConfigurationException) IdemAutoConfigurationTest.causeOf(
          ctx.getStartupFailure(), IdemConfigurationException.class);
      assertThat(e.property()).isEqualTo("idem.principal");
      assertThat(e).hasMessageContaining("bean 'payments'").hasMessageContaining("PrincipalResolver<Object> bean")
          .hasMessageContaining("dev.idem.core.spi.PrincipalResolver")
          .hasMessageContaining("idem.principal=shared").hasMessageContaining("spring-boot-starter-security");
    });
  }

  @Test
  void withoutAnIdempotentMethodOrAFilterNoPrincipalSourceIsNeeded() {
    new ApplicationContextRunner().withClassLoader(WITHOUT_SPRING_SECURITY)
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .run(ctx -> assertThat(ctx).hasNotFailed());
  }

  @Test
  void theFilterWithoutSpringSecurityOrAResolverRefusesToStart() {
    web().withClassLoader(WITHOUT_SPRING_SECURITY).run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.principal").hasMessageContaining("Idempotency-Key filter");
    });
  }

  @Test
  void sharedIsTheExplicitEscapeHatchForSingleTenantApplications() {
    methods().withClassLoader(WITHOUT_SPRING_SECURITY).withPropertyValues("idem.principal=shared").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
      payments.charge("shared-1", "acct", 1);
      assertThat(payments.charge("shared-1", "acct", 1).get("charge")).isEqualTo(1);
    });
    web().withClassLoader(WITHOUT_SPRING_SECURITY).withPropertyValues("idem.principal=shared").run(ctx -> {
      assertThat(ctx).hasNotFailed().hasBean("idempotencyFilter");
      MockHttpServletRequest request = new MockHttpServletRequest();
      request.setUserPrincipal(() -> "alice");
      assertThat(ctx.getBean(IdempotencyFilterConfig.class).principalResolver().resolve(request)).as("everyone is anonymous").isNull();
    });
  }

  @Test
  void servletTakesTheContainersUser() {
    web().withClassLoader(WITHOUT_SPRING_SECURITY).withPropertyValues("idem.principal=servlet").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      MockHttpServletRequest request = new MockHttpServletRequest();
      request.setUserPrincipal(() -> "alice");
      assertThat(ctx.getBean(IdempotencyFilterConfig.class).principalResolver().resolve(request)).isEqualTo("alice");
    });
  }

  @Test
  void springSecurityNamedButAbsentStopsTheStart() {
    new ApplicationContextRunner().withClassLoader(WITHOUT_SPRING_SECURITY)
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.principal=spring-security")
        .run(ctx -> assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
            .hasMessageContaining("idem.principal").hasMessageContaining("Spring Security is not on the class path"));
  }

  /** The application's resolver for every stack (it was an {@code IdemPrincipalResolver} bean). */
  @Configuration(proxyBeanMethods = false)
  static class EveryStackResolver {
    @Bean
    PrincipalResolver<Object> tenantResolver() {
      return call -> "tenant-7";
    }
  }

  /** The application's resolver for the filter only (it was a {@code dev.idem.servlet.PrincipalResolver} bean). */
  @Configuration(proxyBeanMethods = false)
  static class FilterResolver {
    @Bean
    PrincipalResolver<HttpServletRequest> headerResolver() {
      return request -> request.getHeader("X-Tenant");
    }
  }

  @Test
  void anApplicationResolverBeanIsASourceForMethodsAndTheFilter() {
    web().withClassLoader(WITHOUT_SPRING_SECURITY)
        .withUserConfiguration(EveryStackResolver.class)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).principalResolver().resolve(new MockHttpServletRequest())).isEqualTo("tenant-7");
        });
    web().withClassLoader(WITHOUT_SPRING_SECURITY)
        .withUserConfiguration(FilterResolver.class)
        .run(ctx -> {
          MockHttpServletRequest request = new MockHttpServletRequest();
          request.addHeader("X-Tenant", "t-9");
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).principalResolver().resolve(request)).isEqualTo("t-9");
        });
  }

  /**
   * With both beans, the filter takes the one typed for its requests and {@code @Idempotent}
   * methods the one for every stack, as with the two interfaces they replace; a bean typed for the
   * filter is not a source for methods.
   */
  @Test
  void aResolverTypedForTheFilterWinsThereAndIsNoSourceForMethods() {
    methods().withClassLoader(WITHOUT_SPRING_SECURITY)
        .withUserConfiguration(EveryStackResolver.class, FilterResolver.class)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
          payments.charge("both-1", "acct", 1);
          assertThat(storedFor(ctx.getBean(LeaseStore.class), "tenant-7", "both-1")).isTrue();
        });
    web().withClassLoader(WITHOUT_SPRING_SECURITY)
        .withUserConfiguration(EveryStackResolver.class, FilterResolver.class)
        .run(ctx -> {
          MockHttpServletRequest request = new MockHttpServletRequest();
          request.addHeader("X-Tenant", "t-9");
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).principalResolver().resolve(request)).isEqualTo("t-9");
        });
    methods().withClassLoader(WITHOUT_SPRING_SECURITY)
        .withUserConfiguration(FilterResolver.class)
        .run(ctx -> assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
            .hasMessageContaining("bean 'payments'"));
  }

  /** @return whether the store holds a completed record of the key in exactly that principal's scope, for operation "charge" */
  private static boolean storedFor(LeaseStore store, String principal, String key) {
    LeaseStore plain = store instanceof TimedLeaseStore timed ? timed.delegate() : store;
    return ((KeyStatusReader) plain).status(Scope.of(principal, "charge"), IdempotencyKey.of(key)) instanceof KeyStatus.Completed;
  }

  /**
   * The principal strings that {@code @Idempotent} methods store in every key's scope, which an
   * upgrade must not change: Spring Security's user name, {@code idem.method-principal} with
   * {@code idem.principal=shared}, the application's resolver bean's answer, and the anonymous
   * principal for an anonymous caller.
   */
  @Test
  void thePrincipalsStoredForMethodsAreTheSameStrings() {
    methods().run(ctx -> {
      IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
      as("alice");
      payments.charge("strings-1", "acct", 1);
      SecurityContextHolder.clearContext();
      payments.charge("strings-2", "acct", 1);
      assertThat(storedFor(ctx.getBean(LeaseStore.class), "alice", "strings-1")).isTrue();
      assertThat(storedFor(ctx.getBean(LeaseStore.class), "anonymous", "strings-2")).isTrue();
    });
    methods().withClassLoader(WITHOUT_SPRING_SECURITY).withPropertyValues("idem.principal=shared").run(ctx -> {
      ctx.getBean(IdemAutoConfigurationTest.Payments.class).charge("strings-3", "acct", 1);
      assertThat(storedFor(ctx.getBean(LeaseStore.class), "application", "strings-3")).isTrue();
    });
    methods().withClassLoader(WITHOUT_SPRING_SECURITY).withUserConfiguration(EveryStackResolver.class).run(ctx -> {
      ctx.getBean(IdemAutoConfigurationTest.Payments.class).charge("strings-4", "acct", 1);
      assertThat(storedFor(ctx.getBean(LeaseStore.class), "tenant-7", "strings-4")).isTrue();
    });
  }

  @Test
  void withSpringSecurityAnIdempotentMethodIsScopedToTheAuthenticatedUser() {
    methods().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
      as("alice");
      Map<String, Object> alices = payments.charge("same-key", "acct-1", 500);
      as("bob");
      Map<String, Object> bobs = payments.charge("same-key", "acct-1", 500);
      assertThat(bobs.get("charge")).as("bob's own charge, not alice's receipt").isEqualTo(2);
      assertThat(alices.get("charge")).isEqualTo(1);
      as("alice");
      assertThat(payments.charge("same-key", "acct-1", 500)).isEqualTo(alices);
      assertThatThrownBy(() -> payments.charge("same-key", "acct-1", 600)).isInstanceOf(IdempotencyKeyReusedException.class);
      assertThat(payments.charges()).isEqualTo(2);
    });
  }

  @Test
  void anonymousCallersShareTheAnonymousScopeButNoUserShares() {
    methods().run(ctx -> {
      IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
      SecurityContextHolder.getContext().setAuthentication(
          new AnonymousAuthenticationToken("k", "anonymousUser", AuthorityUtils.createAuthorityList("ROLE_ANONYMOUS")));
      Map<String, Object> anonymous = payments.charge("anon-key", "acct-1", 5);
      SecurityContextHolder.clearContext();
      assertThat(payments.charge("anon-key", "acct-1", 5)).as("no authentication is anonymous too").isEqualTo(anonymous);
      as("anonymous"); // a user who calls himself so
      assertThat(payments.charge("anon-key", "acct-1", 5).get("charge")).isEqualTo(2);
      TestingAuthenticationToken unauthenticated = new TestingAuthenticationToken("carol", "n/a");
      unauthenticated.setAuthenticated(false);
      SecurityContextHolder.getContext().setAuthentication(unauthenticated);
      assertThat(payments.charge("anon-key", "acct-1", 5)).as("not authenticated is anonymous").isEqualTo(anonymous);
    });
  }

  @Test
  void theFilterTakesSpringSecuritysUserByDefault() {
    web().run(ctx -> {
      PrincipalResolver<? super HttpServletRequest> resolver = ctx.getBean(IdempotencyFilterConfig.class).principalResolver();
      as("alice");
      assertThat(resolver.resolve(new MockHttpServletRequest())).isEqualTo("alice");
      SecurityContextHolder.getContext().setAuthentication(
          new AnonymousAuthenticationToken("k", "anonymousUser", AuthorityUtils.createAuthorityList("ROLE_ANONYMOUS")));
      assertThat(resolver.resolve(new MockHttpServletRequest())).isNull();
    });
  }

  @Test
  void overloadsSharingAKeyAndArgumentsNoLongerReplayEachOthersResult() throws Exception {
    methods().withBean(Overloads.class).run(ctx -> {
      Overloads overloads = ctx.getBean(Overloads.class);
      as("alice");
      assertThat(overloads.pay("one-key", 5L)).isEqualTo("long 5");
      assertThat(overloads.pay("one-key", 5)).as("another method, another operation").isEqualTo("int 5");
      assertThat(overloads.pay("one-key", 5L)).isEqualTo("long 5");
    });
    assertThat(IdempotentMethods.defaultOperation(Overloads.class.getMethod("pay", String.class, long.class)))
        .isEqualTo("dev.idem.spring.PrincipalSourceTest$Overloads.pay(java.lang.String,long)");
  }

  /** A service used through its interface, with the annotations on the implementation. */
  public interface Charges {
    String charge(String key, long cents);
  }

  public static class ChargesImpl implements Charges {
    final AtomicInteger runs = new AtomicInteger();

    @Override
    @Idempotent
    public String charge(@Idempotent.Key String key, long cents) {
      return "run " + runs.incrementAndGet();
    }
  }

  /** Interface-based (JDK) proxies, as applications without proxyTargetClass get. */
  @Configuration(proxyBeanMethods = false)
  static class JdkProxies {
    @Bean
    static DefaultAdvisorAutoProxyCreator jdkProxyCreator() {
      return new DefaultAdvisorAutoProxyCreator();
    }
  }

  @Test
  void anIdempotentMethodBehindAJdkProxyFailedToFindItsAnnotationAndKey() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withUserConfiguration(JdkProxies.class)
        .withBean(Charges.class, ChargesImpl::new)
        .run(ctx -> {
          Charges charges = ctx.getBean(Charges.class);
          assertThat(Proxy.isProxyClass(charges.getClass())).isTrue();
          as("alice");
          assertThat(charges.charge("jdk-1", 5)).isEqualTo("run 1");
          assertThat(charges.charge("jdk-1", 5)).isEqualTo("run 1");
          assertThat(charges.charge("jdk-2", 5)).isEqualTo("run 2");
        });
  }

  /** Two overloads whose arguments serialize alike. */
  public static class Overloads {
    @Idempotent
    public String pay(@Idempotent.Key String key, long cents) {
      return "long " + cents;
    }

    @Idempotent
    public String pay(@Idempotent.Key String key, int cents) {
      return "int " + cents;
    }
  }
}
