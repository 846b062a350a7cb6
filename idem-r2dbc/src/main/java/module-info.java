/**
 * Idem's lease mode without blocking on R2DBC (PostgreSQL, MariaDB/MySQL), on idem-jdbc's key
 * table and statements. Exports {@code dev.idem.r2dbc}.
 */
module dev.idem.r2dbc {
  requires transitive dev.idem.core;
  requires transitive dev.idem.jdbc; // Dialect, in R2dbcLeaseStore#dialect()
  requires transitive r2dbc.spi;
  requires reactor.core;
  requires org.reactivestreams;
  requires static transitive org.jspecify;

  exports dev.idem.r2dbc;
}
