/**
 * The IETF Idempotency-Key header on Spring WebFlux, without blocking: the {@code WebFilter} and
 * its configuration. Exports {@code dev.idem.webflux}.
 */
module dev.idem.webflux {
  requires transitive dev.idem.core;
  requires transitive spring.web;
  requires transitive spring.webflux;
  requires spring.core;
  requires transitive reactor.core;
  requires transitive org.reactivestreams;
  requires static transitive org.jspecify;
  // optional: with it, an attempt starts inside the request's observation (IdempotencyWebFilter)
  requires static context.propagation;

  exports dev.idem.webflux;
}
