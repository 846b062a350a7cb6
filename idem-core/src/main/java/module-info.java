/**
 * Idem's engine, framework-free: keys, fingerprints, stored responses, lease mode and its stores'
 * SPI, and the steps of multi-step operations. Exports the API ({@code dev.idem.core}, {@code
 * dev.idem.core.steps}), the SPI for store authors ({@code dev.idem.core.spi}) and the HTTP rules
 * that Idem's HTTP filters share ({@code dev.idem.core.http}); {@code dev.idem.core.internal} is not
 * exported. On the class path (most applications) this descriptor is ignored and every public type
 * is reachable: the internal package is still no API.
 */
module dev.idem.core {
  requires transitive java.sql; // EffectContext.connection() is API
  requires static transitive org.jspecify;

  exports dev.idem.core;
  exports dev.idem.core.http;
  exports dev.idem.core.spi;
  exports dev.idem.core.steps;
}
