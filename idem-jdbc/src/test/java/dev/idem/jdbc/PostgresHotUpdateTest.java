package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A lease-mode completion within the lease rewrites no indexed column, so PostgreSQL can make it a
 * HOT update (no new index entry, no dead index tuple). Before, the completion moved {@code
 * expires_at}, which is indexed for purging, and no completion was HOT. Reads the table's counters
 * from {@code pg_stat_user_tables} after {@code pg_stat_force_next_flush()} (PostgreSQL 15+).
 */
class PostgresHotUpdateTest {

  private static final int COMPLETIONS = 200;

  @Test
  void leaseCompletionWithinTheLeaseIsAHotUpdate() throws Exception {
    TestDb db = TestDb.create(TestDb.Kind.POSTGRESQL);
    CountingDataSource ds = new CountingDataSource(db::open);
    try {
      JdbcLeaseStore store = JdbcLeaseStore.builder(ds).table("hot_keys").build();
      for (int i = 0; i < COMPLETIONS; i++) {
        IdempotentRequest r = IdempotentRequest.ofJson("p", "op", UUID.randomUUID().toString(),
            ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8));
        store.claim(r, "owner", Duration.ofSeconds(30), Duration.ofMinutes(5));
        assertThat(store.complete(r.scope(), r.key(), "owner", StoredResponse.of(201, "note " + i), Duration.ofMinutes(5))).isTrue();
      }
      long[] counts = updates(ds);
      System.out.println("[hot] " + counts[1] + " of " + counts[0] + " completions were HOT updates");
      assertThat(counts[0]).isEqualTo(COMPLETIONS);
      // A page that is full forces a non-HOT update whatever the columns; most are not full.
      assertThat(counts[1]).isGreaterThan(COMPLETIONS / 2);
    } finally {
      ds.close();
      db.drop();
    }
  }

  /**
   * Transactional mode: the claim writes an expiry a margin past the retention, and the completion
   * in the same transaction leaves it as it is. Before, every completion moved {@code expires_at}
   * and none was HOT (the issue measured 28 % non-HOT updates in transactional mode).
   */
  @Test
  void transactionalCompletionIsAHotUpdate() throws Exception {
    TestDb db = TestDb.create(TestDb.Kind.POSTGRESQL);
    CountingDataSource ds = new CountingDataSource(db::open);
    try {
      JdbcIdempotency idem = JdbcIdempotency.builder().table("hot_keys").dataSource(ds).strategy(JdbcIdempotency.Strategy.CLAIM_FIRST).build();
      TransactionalIdempotency engine = TransactionalIdempotency.onDataSource(idem, ds, dev.idem.core.IdemListener.NONE);
      for (int i = 0; i < COMPLETIONS; i++) {
        IdempotentRequest r = IdempotentRequest.ofJson("p", "op", UUID.randomUUID().toString(),
            ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8));
        StoredResponse answer = StoredResponse.of(201, "note " + i);
        if (i % 2 == 0) {
          assertThat(idem.execute(r, c -> answer).replayed()).isFalse(); // a transaction Idem owns
        } else {
          assertThat(engine.attempt(r, context -> answer).kind()).isEqualTo(dev.idem.core.AttemptResult.Kind.EXECUTED);
        }
      }
      long[] counts = updates(ds);
      System.out.println("[hot] " + counts[1] + " of " + counts[0] + " transactional completions were HOT updates");
      assertThat(counts[0]).isEqualTo(COMPLETIONS);
      assertThat(counts[1]).isGreaterThan(COMPLETIONS / 2);
    } finally {
      ds.close();
      db.drop();
    }
  }

  /** @return {updates, HOT updates} of table hot_keys, once the statistics show all the updates */
  private static long[] updates(CountingDataSource ds) throws Exception {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
      long[] counts = {0, 0};
      for (int i = 0; i < 100 && counts[0] < COMPLETIONS; i++) {
        st.execute("SELECT pg_stat_force_next_flush()");
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'hot_keys'");
            ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            counts[0] = rs.getLong(1);
            counts[1] = rs.getLong(2);
          }
        }
        if (counts[0] < COMPLETIONS) {
          Thread.sleep(50); // the statistics reach shared memory when the backend next goes idle
        }
      }
      return counts;
    }
  }
}
