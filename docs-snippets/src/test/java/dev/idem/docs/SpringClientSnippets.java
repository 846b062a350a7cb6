package dev.idem.docs;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.spring.IdempotentExchangeFilter;
import dev.idem.client.spring.IdempotentRequestInterceptor;
import dev.idem.core.OutcomeUnknownException;
import java.time.Duration;
import java.util.UUID;
import org.springframework.http.ResponseEntity;
import org.springframework.web.client.RestClient;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/** The snippets of docs/client.md on Spring's HTTP clients; {@link SpringClientSnippetsTest} runs them against a local server. */
final class SpringClientSnippets {

  private SpringClientSnippets() {}

  static WebClient webClient(String baseUrl) {
    // tag::webclient[]
    IdempotentExchangeFilter idempotent = IdempotentExchangeFilter.builder()
        .retryPolicy(ClientRetryPolicy.builder().maxAttempts(4).maxDuration(Duration.ofSeconds(30)).build())
        .build();
    WebClient client = WebClient.builder().baseUrl(baseUrl)
        .apply(idempotent::install)   // the filter, and a key bound to every request spec
        .build();
    // end::webclient[]
    return client;
  }

  static Mono<String> webClientSend(WebClient client) {
    // tag::webclient-send[]
    Mono<String> created = client.post().uri("/notes").bodyValue("{\"title\":\"milk\"}")
        .retrieve().bodyToMono(String.class);
    // 503, 503, 201: three attempts, one Idempotency-Key. Fails with OutcomeUnknownException
    // (e.key() resumes) when the retries run out, IdempotencyKeyReusedException on the key-reused 422
    // end::webclient-send[]
    return created;
  }

  static RestClient restClient(String baseUrl) {
    // tag::restclient[]
    RestClient client = RestClient.builder().baseUrl(baseUrl)
        .requestInterceptor(IdempotentRequestInterceptor.builder().build())   // register it last
        .build();
    ResponseEntity<String> created = client.post().uri("/notes").body("{\"title\":\"milk\"}")
        .retrieve().toEntity(String.class);   // same rules, blocking waits, same key and body bytes
    // end::restclient[]
    return client;
  }

  static Mono<String> wrong(WebClient client) {
    // tag::defer-wrong[]
    // WRONG: the key is made inside Mono.defer, so each resubscription of retryWhen makes a new
    // one; the server sees three different operations and may create three notes
    Mono<String> created = Mono.defer(() -> client.post().uri("/notes")
            .header("Idempotency-Key", UUID.randomUUID().toString())
            .bodyValue("{\"title\":\"milk\"}")
            .retrieve().bodyToMono(String.class))
        .retryWhen(Retry.backoff(3, Duration.ofMillis(100)));
    // end::defer-wrong[]
    return created;
  }

  static Mono<String> right(WebClient client) {
    // tag::defer-right[]
    // RIGHT: the key is made once, before the retries, and bound to the request spec; every
    // resubscription sends the same key (install() binds one to every spec by itself)
    String key = UUID.randomUUID().toString();
    Mono<String> created = Mono.defer(() -> client.post().uri("/notes")
            .attributes(IdempotentExchangeFilter.key(key))
            .bodyValue("{\"title\":\"milk\"}")
            .retrieve().bodyToMono(String.class))
        .retryWhen(Retry.backoff(3, Duration.ofMillis(100)).filter(OutcomeUnknownException.class::isInstance));
    // end::defer-right[]
    return created;
  }
}
