package dev.idem.benchmarks;

import java.sql.SQLException;

/**
 * One thing the harness measures: a way to handle "create a note" requests against a store. The
 * runner calls {@link #setUp()} before each run, then opens one {@link Client} per client thread
 * (on that thread), calls it with keys, closes it, and may ask {@link #effects()}.
 */
interface Workload {

  /** Where the keys of a run come from. */
  enum KeySupply {
    /** a new random UUIDv4 key per operation */
    NEW_V4,
    /** a new time-ordered UUIDv7 key per operation */
    NEW_V7,
    /** a random one of {@link #existingKeys()}: a retry of a completed request */
    EXISTING
  }

  /** @return the id used in the report, the CSV files and {@code --workloads} */
  String id();

  /** @return where keys come from; new UUIDv4 keys unless overridden */
  default KeySupply keySupply() {
    return KeySupply.NEW_V4;
  }

  /** @return the stored keys, for {@link KeySupply#EXISTING} */
  default String[] existingKeys() {
    return new String[0];
  }

  /** Prepares the tables (or keys) for a run: most workloads start each run from empty tables. */
  void setUp() throws Exception;

  /** @return a client with a connection of its own; called on the client's thread */
  Client client() throws Exception;

  /** @return whether racing clients on one key means anything here (not for replays) */
  default boolean raceable() {
    return true;
  }

  /**
   * @return {@code {effects, distinct keys that have an effect}} as counted in the store (or by the
   *     in-memory effect of lease mode) since {@link #setUp()}
   */
  long[] effects() throws Exception;

  /** One client: one connection, used by one thread. */
  interface Client extends AutoCloseable {
    /** Handles one request with this idempotency key; an exception counts as an error. */
    void run(String key) throws Exception;

    @Override
    void close() throws SQLException;
  }
}
