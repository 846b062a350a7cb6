package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.InMemoryLeaseStore;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.Test;

/** A container that instantiates the filter by class name finds the configuration in the context. */
class IdempotencyFilterInitTest {

  @Test
  void noArgFilterTakesItsConfigurationFromTheServletContext() throws Exception {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    TestApp app = new TestApp();
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler("/");
    context.setAttribute(IdempotencyFilterConfig.CONTEXT_ATTRIBUTE, IdempotencyFilterConfig.builder(store).build());
    context.addFilter(new FilterHolder(IdempotencyFilter.class), "/*", EnumSet.of(DispatcherType.REQUEST));
    context.addServlet(new ServletHolder(app), "/*");
    server.setHandler(context);
    server.start();
    try {
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + connector.getLocalPort() + "/echo"))
          .header("Idempotency-Key", "init").POST(HttpRequest.BodyPublishers.ofString("hello")).build();
      HttpResponse<String> first = client.send(request, HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> second = client.send(request, HttpResponse.BodyHandlers.ofString());
      assertThat(first.body()).isEqualTo("hello");
      assertThat(second.headers().firstValue(IdempotencyFilter.REPLAYED_HEADER)).hasValue("true");
      assertThat(app.calls("POST /echo")).isEqualTo(1);
      assertThat(store.size()).isEqualTo(1);
    } finally {
      server.stop();
    }
  }

  @Test
  void noArgFilterWithoutConfigurationFailsToStart() throws Exception {
    IdempotencyFilter filter = new IdempotencyFilter();
    Server server = new Server();
    ServletContextHandler context = new ServletContextHandler("/");
    context.addFilter(new FilterHolder(filter), "/*", EnumSet.of(DispatcherType.REQUEST));
    server.setHandler(context);
    try {
      server.start();
      assertThat(context.isAvailable()).isFalse();
    } catch (Exception e) {
      assertThat(e).hasStackTraceContaining(IdempotencyFilterConfig.CONTEXT_ATTRIBUTE);
    } finally {
      server.stop();
    }
  }

  @Test
  void noArgFilterThatWasNeverInitialisedRefusesRequests() {
    IdempotencyFilter filter = new IdempotencyFilter(); // no configuration, and init() never ran
    AtomicInteger chainCalls = new AtomicInteger();
    assertThatThrownBy(() -> filter.doFilter(untouchable(HttpServletRequest.class), untouchable(HttpServletResponse.class),
        (request, response) -> chainCalls.incrementAndGet()))
        .isInstanceOf(ServletException.class)
        .hasMessageContaining("not initialised");
    assertThat(chainCalls).hasValue(0);
  }

  /** A request or response that fails the test if the filter reads or writes it. */
  private static <T> T untouchable(Class<T> type) {
    return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
      throw new AssertionError("the filter used " + type.getSimpleName() + "." + method.getName());
    }));
  }
}
