package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link SchemaCreation} on its own: what it commits and when (the race of many creators is
 * SchemaCreationRaceContract's, in idem-outbox, where every table Idem makes is at hand).
 */
class SchemaCreationTest {

  private static final List<String> DDL = List.of("CREATE TABLE IF NOT EXISTS sc_table (id VARCHAR(10) PRIMARY KEY)");

  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void onAnAutoCommitConnectionTheTableIsCommittedAndAutoCommitStaysOn(TestDb.Kind kind) throws Exception {
    TestDb db = TestDb.create(kind);
    try (Connection c = db.open()) {
      SchemaCreation.run(c, "sc_table", DDL);
      SchemaCreation.run(c, "sc_table", DDL); // a second time: nothing to do, no failure
      assertThat(c.getAutoCommit()).isTrue();
      assertThat(tableSeenElsewhere(db)).isTrue();
    } finally {
      db.drop();
    }
  }

  @ParameterizedTest
  @EnumSource(value = TestDb.Kind.class, names = {"POSTGRESQL", "SQLITE"}) // MySQL's DDL commits on its own
  void insideATransactionTheTableJoinsItAndGoesWithItsRollback(TestDb.Kind kind) throws Exception {
    TestDb db = TestDb.create(kind);
    try (Connection c = db.open()) {
      c.setAutoCommit(false);
      SchemaCreation.run(c, "sc_table", DDL);
      assertThat(c.getAutoCommit()).isFalse();
      c.rollback();
      assertThat(tableSeenElsewhere(db)).isFalse();
    } finally {
      db.drop();
    }
  }

  @ParameterizedTest
  @EnumSource(value = TestDb.Kind.class, names = "POSTGRESQL")
  void onPostgresACreatorWithoutTheLockThatWinsTheCatalogRaceIsNotAFailure(TestDb.Kind kind) throws Exception {
    // Another creator (an older version, a hand-run script) creates the table without the advisory
    // lock and has not committed yet: our CREATE TABLE IF NOT EXISTS waits on the catalog, then
    // fails with a unique violation when the other commits. That counts as made.
    TestDb db = TestDb.create(kind);
    try (Connection other = db.open(); Connection c = db.open()) {
      other.setAutoCommit(false);
      try (Statement st = other.createStatement()) {
        st.execute(DDL.get(0));
      }
      CompletableFuture<Void> ours = CompletableFuture.runAsync(() -> {
        try {
          SchemaCreation.run(c, "sc_table", DDL);
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
      awaitWaitingOnALock(db);
      other.commit();
      ours.get(30, TimeUnit.SECONDS);
      assertThat(c.getAutoCommit()).isTrue();
      assertThat(tableSeenElsewhere(db)).isTrue();
    } finally {
      db.drop();
    }
  }

  private static void awaitWaitingOnALock(TestDb db) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    try (Connection watch = db.open();
        PreparedStatement ps = watch.prepareStatement("SELECT COUNT(*) FROM pg_locks WHERE NOT granted")) {
      while (System.nanoTime() < deadline) {
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next() && rs.getInt(1) > 0) {
            return;
          }
        }
        Thread.sleep(20);
      }
    }
    assumeTrue(false, "the second creator never waited on the first one's catalog lock");
  }

  private static boolean tableSeenElsewhere(TestDb db) throws SQLException {
    try (Connection other = db.open()) {
      try (ResultSet rs = other.getMetaData().getTables(other.getCatalog(), null, "sc_table", new String[] {"TABLE"})) {
        return rs.next();
      }
    }
  }
}
