/**
 * A retrying HTTP client that keeps one idempotency key per logical operation, on Failsafe's
 * retry policies; reads problem answers with Jackson's streaming parser. Exports {@code
 * dev.idem.client}.
 */
module dev.idem.client {
  requires transitive dev.idem.core;
  requires transitive java.net.http;
  requires transitive dev.failsafe.core; // Builder.scheduler(dev.failsafe.spi.Scheduler) is API
  requires com.fasterxml.jackson.core;
  requires static transitive org.jspecify;

  exports dev.idem.client;
}
