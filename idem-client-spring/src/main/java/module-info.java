/**
 * One idempotency key per logical operation on Spring's HTTP clients: {@code
 * IdempotentExchangeFilter} for WebClient (non-blocking retries on Reactor) and {@code
 * IdempotentRequestInterceptor} for RestClient and RestTemplate (blocking retries), both on
 * idem-client's retry rules. Spring and Reactor are {@code requires static}: the application
 * brings spring-web for the interceptor, and spring-webflux with reactor-core for the filter.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.idem.client.spring {
  requires transitive dev.idem.client;
  requires transitive dev.idem.core;
  requires static transitive org.jspecify;

  // optional: the application brings the client it uses
  requires static transitive spring.core; // HttpStatusCode's neighbours, DataBuffer
  requires static transitive spring.web; // ClientHttpRequestInterceptor, HttpRequest
  requires static transitive spring.webflux; // ExchangeFilterFunction, ClientRequest
  requires static transitive reactor.core; // Mono, Scheduler
  requires static org.reactivestreams; // Publisher, of the request body the filter watches

  exports dev.idem.client.spring;
}
