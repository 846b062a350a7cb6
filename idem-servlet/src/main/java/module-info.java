/**
 * The IETF Idempotency-Key header on Jakarta Servlet 6: the filter, its configuration and its
 * problem answers. Exports {@code dev.idem.servlet}; {@code dev.idem.servlet.internal} (request
 * buffering, response capture) is not exported; the key, header, path and problem rules it shares
 * with the WebFlux filter are idem-core's {@code dev.idem.core.http}.
 */
module dev.idem.servlet {
  requires transitive dev.idem.core;
  requires transitive jakarta.servlet;
  requires static transitive org.jspecify;

  exports dev.idem.servlet;
}
