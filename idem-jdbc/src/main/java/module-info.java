/**
 * Idem on JDBC: transactional mode (the key and the effect's writes in one transaction), the key
 * table, the JDBC lease store, the steps' store, and a dialect per database. Exports the API
 * ({@code dev.idem.jdbc}, {@code dev.idem.jdbc.steps}) and the dialects ({@code
 * dev.idem.jdbc.dialect}, to add a database); {@code dev.idem.jdbc.internal} is not exported.
 */
module dev.idem.jdbc {
  requires transitive dev.idem.core;
  requires transitive java.sql;
  requires static transitive org.jspecify;

  exports dev.idem.jdbc;
  exports dev.idem.jdbc.dialect;
  exports dev.idem.jdbc.steps;
}
