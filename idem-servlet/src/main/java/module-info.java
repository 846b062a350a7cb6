/**
 * The IETF Idempotency-Key header on Jakarta Servlet 6: the filter, its configuration and its
 * problem answers. Exports {@code dev.idem.servlet}; {@code dev.idem.servlet.internal} (request
 * buffering, response capture, header rules) is not exported.
 */
module dev.idem.servlet {
  requires transitive dev.idem.core;
  requires transitive jakarta.servlet;
  requires static transitive org.jspecify;

  exports dev.idem.servlet;
}
