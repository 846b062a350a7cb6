package dev.idem.docs;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.spring.IdempotentExchangeFilter;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.web.reactive.function.client.WebClient;

/** Runs the snippets of {@link SpringClientSnippets} against a local server that answers 503 twice, then 201. */
class SpringClientSnippetsTest {

  private final List<String> keys = new CopyOnWriteArrayList<>();
  private HttpServer server;
  private String baseUrl;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      exchange.getRequestBody().readAllBytes();
      keys.add(String.valueOf(exchange.getRequestHeaders().getFirst("Idempotency-Key")));
      boolean created = keys.size() % 3 == 0;
      exchange.getResponseHeaders().add("Retry-After", "0");
      byte[] body = created ? "created".getBytes() : new byte[0];
      exchange.sendResponseHeaders(created ? 201 : 503, body.length == 0 ? -1 : body.length);
      if (body.length > 0) {
        exchange.getResponseBody().write(body);
      }
      exchange.close();
    });
    server.start();
    baseUrl = "http://127.0.0.1:" + server.getAddress().getPort();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  @Test
  void webClientSendsThreeAttemptsWithOneKey() {
    assertThat(SpringClientSnippets.webClientSend(SpringClientSnippets.webClient(baseUrl)).block(Duration.ofSeconds(10))).isEqualTo("created");
    assertThat(keys).hasSize(3).containsOnly(keys.get(0));
  }

  @Test
  void restClientSendsThreeAttemptsWithOneKey() {
    SpringClientSnippets.restClient(baseUrl);
    assertThat(keys).hasSize(3).containsOnly(keys.get(0));
  }

  /** The outer retryWhen does the retrying here: the filter makes one attempt per subscription. */
  private WebClient oneAttemptPerSubscription() {
    IdempotentExchangeFilter filter = IdempotentExchangeFilter.builder().retryPolicy(ClientRetryPolicy.builder().maxAttempts(1).build()).build();
    return WebClient.builder().baseUrl(baseUrl).apply(filter::install).build();
  }

  @Test
  void theWrongWaySendsANewKeyPerRetry() {
    assertThat(SpringClientSnippets.wrong(oneAttemptPerSubscription()).block(Duration.ofSeconds(10))).isEqualTo("created");
    assertThat(keys).hasSize(3).doesNotHaveDuplicates();
  }

  @Test
  void theRightWaySendsOneKey() {
    assertThat(SpringClientSnippets.right(oneAttemptPerSubscription()).block(Duration.ofSeconds(10))).isEqualTo("created");
    assertThat(keys).hasSize(3).containsOnly(keys.get(0));
  }
}
