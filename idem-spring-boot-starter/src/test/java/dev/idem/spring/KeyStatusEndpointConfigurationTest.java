package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.servlet.KeyStatusEndpoint;
import dev.idem.spring.internal.TimedLeaseStore;
import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/** {@code idem.key-status.*}: the endpoint is off by default, and on it reads the store of the filter's mode. */
class KeyStatusEndpointConfigurationTest {

  @TempDir Path dir;

  /** The caller's name from a header, standing in for authentication. */
  @Configuration(proxyBeanMethods = false)
  static class HeaderPrincipal {
    @Bean
    PrincipalResolver<HttpServletRequest> principalResolver() {
      return request -> request.getHeader("X-User");
    }
  }

  private WebApplicationContextRunner web() {
    return new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withUserConfiguration(HeaderPrincipal.class)
        .withPropertyValues("idem.required-key-routes=POST /notes");
  }

  private static IdempotentRequest request(String principal, String key) {
    return new IdempotentRequest(Scope.of(principal, "POST /notes"), IdempotencyKey.of(key),
        Fingerprint.ofJson("{}".getBytes(StandardCharsets.UTF_8)));
  }

  @SuppressWarnings("unchecked")
  private static MockHttpServletResponse get(ApplicationContext ctx, String user, String path) throws Exception {
    KeyStatusEndpoint endpoint = ((FilterRegistrationBean<KeyStatusEndpoint>) ctx.getBean("idemKeyStatusEndpoint")).getFilter();
    int query = path.indexOf('?');
    MockHttpServletRequest request = new MockHttpServletRequest("GET", query < 0 ? path : path.substring(0, query));
    if (query >= 0) {
      request.setQueryString(path.substring(query + 1));
      for (String pair : path.substring(query + 1).split("&")) {
        String[] nv = pair.split("=", 2);
        request.addParameter(nv[0], java.net.URLDecoder.decode(nv[1], StandardCharsets.UTF_8));
      }
    }
    request.addHeader("X-User", user);
    MockHttpServletResponse response = new MockHttpServletResponse();
    MockFilterChain chain = new MockFilterChain();
    endpoint.doFilter(request, response, chain);
    assertThat(chain.getRequest()).as("answered by the endpoint, not passed on").isNull();
    return response;
  }

  @Test
  void theEndpointIsOffByDefault() {
    web().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx).doesNotHaveBean("idemKeyStatusEndpoint");
    });
  }

  /**
   * Was: a live key of an {@code @Idempotent} method ({@code operation=charge}) was answered 404,
   * the same bytes as a key never sent. It is read with the methods' principal in their store.
   */
  @Test
  void anIdempotentMethodsLiveKeyIsFoundByItsOperation() {
    web().withConfiguration(AutoConfigurations.of(org.springframework.boot.autoconfigure.aop.AopAutoConfiguration.class))
        .withUserConfiguration(IdemAutoConfigurationTest.PaymentsConfig.class)
        .withPropertyValues("idem.key-status.enabled=true", "idem.principal=shared").run(ctx -> {
          assertThat(ctx).hasNotFailed();
          ctx.getBean(IdemAutoConfigurationTest.Payments.class).charge("pay-1", "acct-9", 500);
          MockHttpServletResponse live = get(ctx, "alice", "/idempotency-keys/pay-1?operation=charge");
          assertThat(live.getStatus()).isEqualTo(200);
          assertThat(live.getContentAsString()).startsWith("{\"state\":\"completed\",\"status\":200");
          MockHttpServletResponse unknownKey = get(ctx, "alice", "/idempotency-keys/pay-2?operation=charge");
          MockHttpServletResponse unknownOperation = get(ctx, "alice", "/idempotency-keys/pay-1?operation=refund");
          assertThat(unknownKey.getStatus()).isEqualTo(404);
          assertThat(unknownKey.getContentAsByteArray()).isEqualTo(unknownOperation.getContentAsByteArray());
        });
  }

  @Test
  void inLeaseModeItReadsTheLeaseStoreForTheCallersOwnKeys() {
    web().withPropertyValues("idem.key-status.enabled=true").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(dev.idem.core.spi.LeaseStore.class)).isInstanceOf(InMemoryLeaseStore.class);
      ctx.getBean(LeaseIdempotency.class).execute(request("alice", "k-1"), c -> StoredResponse.of(201, "{}"));
      MockHttpServletResponse own = get(ctx, "alice", "/idempotency-keys/k-1?operation=POST%20%2Fnotes");
      assertThat(own.getStatus()).isEqualTo(200);
      assertThat(own.getContentAsString()).startsWith("{\"state\":\"completed\",\"status\":201,\"completedAt\":\"");
      MockHttpServletResponse other = get(ctx, "bob", "/idempotency-keys/k-1?operation=POST%20%2Fnotes");
      MockHttpServletResponse unknown = get(ctx, "alice", "/idempotency-keys/k-2?operation=POST%20%2Fnotes");
      assertThat(other.getStatus()).isEqualTo(404);
      assertThat(other.getContentAsByteArray()).isEqualTo(unknown.getContentAsByteArray());
    });
  }

  @Test
  void inTransactionalModeItReadsTheKeyTableOfTheDataSource() {
    web().withConfiguration(AutoConfigurations.of(BootLine.jdbc()))
        .withPropertyValues("idem.key-status.enabled=true", "idem.key-status.path=/keys", "idem.mode=transactional",
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          try (Connection c = ctx.getBean(DataSource.class).getConnection()) {
            ctx.getBean(JdbcIdempotency.class).execute(c, request("alice", "k-t"), conn -> StoredResponse.of(201, "{}"));
          }
          assertThat(get(ctx, "alice", "/keys/k-t?operation=POST%20%2Fnotes").getContentAsString())
              .startsWith("{\"state\":\"completed\",\"status\":201,");
          assertThat(get(ctx, "bob", "/keys/k-t?operation=POST%20%2Fnotes").getStatus()).isEqualTo(404);
        });
  }

  @Test
  void anApplicationsOwnReaderReplacesTheStoresAndAStoreBeanIsNotTakenForOne() {
    dev.idem.core.KeyStatusReader own = (scope, key) -> key.value().equals("mine")
        ? new dev.idem.core.KeyStatus.Completed(Fingerprint.ofBytes(new byte[0]), 202, java.time.Instant.EPOCH, java.time.Instant.EPOCH)
        : dev.idem.core.KeyStatus.absent();
    web().withPropertyValues("idem.key-status.enabled=true")
        .withBean("ownReader", dev.idem.core.KeyStatusReader.class, () -> own)
        .withBean("otherStore", InMemoryLeaseStore.class, InMemoryLeaseStore::new)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(get(ctx, "alice", "/idempotency-keys/mine?operation=POST%20%2Fnotes").getContentAsString())
              .isEqualTo("{\"state\":\"completed\",\"status\":202,\"completedAt\":\"1970-01-01T00:00:00Z\",\"expiresAt\":\"1970-01-01T00:00:00Z\"}");
        });
  }

  @Test
  void aStoreThatCannotReadStatusesOrABadPathStopsTheStartUp() {
    web().withPropertyValues("idem.key-status.enabled=true")
        .withBean(IdemStoreDecorator.class, () -> store -> new TimedLeaseStore(store, new io.micrometer.core.instrument.simple.SimpleMeterRegistry()))
        .run(ctx -> assertThat(ctx).as("the starter's own timing decorator is seen through").hasNotFailed());
    web().withPropertyValues("idem.key-status.enabled=true")
        .withBean(IdemStoreDecorator.class, () -> store -> new FlakyWrapper(store))
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(configurationFailure(ctx.getStartupFailure())).hasMessageContaining("idem.key-status.enabled")
              .hasMessageContaining("KeyStatusReader");
        });
    web().withPropertyValues("idem.key-status.enabled=true", "idem.key-status.path=/keys/")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(configurationFailure(ctx.getStartupFailure())).hasMessageContaining("idem.key-status.path");
        });
  }

  private static IdemConfigurationException configurationFailure(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof IdemConfigurationException e) {
        return e;
      }
    }
    throw new AssertionError("no IdemConfigurationException in", failure);
  }

  /** A decorator of the application's own that does not read statuses. */
  static final class FlakyWrapper implements dev.idem.core.spi.LeaseStore {
    private final dev.idem.core.spi.LeaseStore d;

    FlakyWrapper(dev.idem.core.spi.LeaseStore d) {
      this.d = d;
    }

    @Override
    public dev.idem.core.spi.ClaimResult claim(IdempotentRequest r, String o, java.time.Duration l, java.time.Duration t) {
      return d.claim(r, o, l, t);
    }

    @Override
    public boolean complete(Scope s, IdempotencyKey k, String o, StoredResponse r, java.time.Duration t) {
      return d.complete(s, k, o, r, t);
    }

    @Override
    public boolean release(Scope s, IdempotencyKey k, String o) {
      return d.release(s, k, o);
    }

    @Override
    public long purgeExpired(int b) {
      return d.purgeExpired(b);
    }
  }
}
