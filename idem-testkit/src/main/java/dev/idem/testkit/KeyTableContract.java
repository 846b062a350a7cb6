package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Part of the {@linkplain TransactionalContract transactional contract}: the key table: created on
 * first use (also inside a rolled-back transaction, and from the shipped schema file), not mistaken
 * for a table of the same name elsewhere, refused with its migration when it compares keys loosely,
 * purged of expired records only.
 *
 * <p>A store's test runs it by subclassing (usually as a JUnit {@code @Nested} class, see {@link
 * TransactionalContract}) and returning its database and write order from {@link #target()}.
 */
public abstract class KeyTableContract extends TransactionalContract {

  /**
   * Regression: a key table created by an earlier version (MariaDB: character columns with PAD
   * SPACE collations) was used as it was; it is now refused at first use with the column and the
   * statement that migrates it, and the migrated table tells {@code "k1 "} from {@code "k1"}.
   */
  @Test
  void aKeyTableThatComparesKeysLooselyIsRefusedWithItsMigrationStatement() throws Exception {
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      Dialect dialect = Dialect.detect(c);
      String looseTemplate = LooseKeyTables.of(dialect);
      Assumptions.assumeTrue(looseTemplate != null, "no loose key table is known for " + dialect.name());
      String loose = looseTemplate.replace("#TABLE#", idem.table());
      st.execute(loose);
      IdempotentRequest request = request("alice", "k1", "{}");
      IdemStoreException refused = Assertions.catchThrowableOfType(
          () -> create(c, request, "{}"), IdemStoreException.class);
      assertThat(refused).as("a loose table is refused").isNotNull();
      assertThat(refused.getMessage()).contains(idem.table()).contains("idem_key");
      assertThat(effectCount()).as("nothing ran").isZero();
      assertThatThrownBy(() -> idem.createSchema(c)).isInstanceOf(IdemStoreException.class).hasMessageContaining("idem_key");
      if (!dialect.keyTableMigration(idem.table()).startsWith("ALTER TABLE")) {
        // SQLite: no statement migrates a column's collation; the message says what to do instead
        assertThat(refused.getMessage()).contains(dialect.keyTableMigration(idem.table()));
        return;
      }
      String message = refused.getMessage();
      String migration = message.substring(message.indexOf("ALTER TABLE"));
      st.execute(migration);
      JdbcIdempotency migrated = builder().table(idem.table()).build();
      Outcome plain = migrated.execute(c, request, conn -> StoredResponse.of(201, "{\"id\":1}"));
      Outcome padded = migrated.execute(c, request("alice", "k1 ", "{}"), conn -> StoredResponse.of(201, "{\"id\":2}"));
      assertThat(plain.replayed()).isFalse();
      assertThat(padded.replayed()).as("after the migration \"k1 \" is another key").isFalse();
    }
  }

  @Test
  void purgeRemovesOnlyExpiredRecordsInBatches() throws Exception {
    try (Connection c = database().open()) {
      for (int i = 0; i < 7; i++) {
        create(c, request("alice", "k-purge-" + i, "{}"), "{}");
      }
      try (Statement st = c.createStatement()) {
        st.executeUpdate("UPDATE " + idem.table() + " SET expires_at = 0 WHERE idem_key <> 'k-purge-6'");
      }
      assertThat(idem.purgeExpired(c, 2)).isEqualTo(6);
      assertThat(recordCount(c)).isEqualTo(1);
      assertThat(idem.purgeExpired(c, 2)).isZero();
      assertThat(create(c, request("alice", "k-purge-6", "{}"), "{}").replayed()).as("the live record was kept").isTrue();
    }
  }

  /**
   * Batches that end inside a run of equal expiries, and expiries spread over time: every expired
   * record goes, whatever batch it falls in (PostgreSQL's and MariaDB's purge start each batch where
   * the last one ended, {@code KeyTableSql#purgeFrom}).
   */
  @Test
  void purgeTakesEveryExpiredRecordWhenBatchesEndAmongEqualExpiries() throws Exception {
    try (Connection c = database().open()) {
      for (int i = 0; i < 26; i++) {
        create(c, request("alice", "k-spread-" + i, "{}"), "{}");
      }
      try (Statement st = c.createStatement()) {
        for (int i = 0; i < 25; i++) {
          // groups of three equal expiries, a batch of four: every batch ends inside a group
          st.executeUpdate("UPDATE " + idem.table() + " SET expires_at = " + (1_000 + i / 3 * 1_000)
              + " WHERE idem_key = 'k-spread-" + i + "'");
        }
      }
      assertThat(idem.purgeExpired(c, 4)).isEqualTo(25);
      assertThat(recordCount(c)).isEqualTo(1);
      assertThat(create(c, request("alice", "k-spread-25", "{}"), "{}").replayed()).as("the live record was kept").isTrue();
    }
  }

  @Test
  void schemaCreatedInsideARolledBackJoinedTransactionIsCreatedAgain() throws Exception {
    IdempotentRequest request = request("alice", "k-ddl", "{}");
    try (Connection c = database().open()) {
      c.setAutoCommit(false);
      if (Dialect.detect(c).ddlCommitsTransaction()) {
        assertThatThrownBy(() -> create(c, request, "{}"))
            .isInstanceOf(IdemStoreException.class)
            .hasMessageContaining("does not exist")
            .hasMessageContaining("commit the caller's open transaction");
        c.rollback();
        c.setAutoCommit(true);
        assertThat(create(c, request, "{}").replayed()).isFalse();
        assertThat(recordCount(c)).isEqualTo(1);
        return;
      }
      create(c, request, "{}");
      c.rollback();
      c.setAutoCommit(true);
      Outcome outcome = create(c, request, "{}");
      assertThat(outcome.replayed()).isFalse();
      assertThat(recordCount(c)).isEqualTo(1);
    }
  }

  /**
   * Regression: tableExists asked the catalog of every database (MariaDB) or schema (PostgreSQL),
   * so a key table of the same name elsewhere stopped Idem from creating its own, and the first
   * lookup failed with "table doesn't exist".
   */
  @Test
  void aKeyTableOfTheSameNameInAnotherDatabaseOrSchemaIsNotMistakenForOurs() throws Exception {
    String other = "other_" + suffix;
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      Dialect dialect = Dialect.detect(c);
      Assumptions.assumeTrue(dialect.hasSchemas(), "SQLite has one database per file");
      st.execute("CREATE SCHEMA " + other); // a database on MySQL and MariaDB
      try {
        st.execute("CREATE TABLE " + other + "." + idem.table() + " (unrelated INT)");
        Outcome outcome = create(c, request("alice", "k-elsewhere", "{}"), "{}");
        assertThat(outcome.replayed()).isFalse();
        assertThat(create(c, request("alice", "k-elsewhere", "{}"), "{}").replayed()).isTrue();
        assertThat(idem.tableExists(c)).isTrue();
      } finally {
        st.execute("DROP SCHEMA " + other + (dialect.schemaIsDatabase() ? "" : " CASCADE"));
      }
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void theShippedSchemaFileCreatesAUsableTable() throws Exception {
    JdbcIdempotency migrated = builder().table("idem_keys").createSchema(false).build();
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS idem_keys");
      String sql;
      try (InputStream in = JdbcIdempotency.class.getResourceAsStream(Dialect.detect(c).schemaResource())) {
        sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
      for (String statement : sql.replaceAll("(?m)^--.*$", "").split(";")) {
        if (!statement.isBlank()) {
          st.execute(statement);
        }
      }
      IdempotentRequest request = request("alice", "k-migrated", "{}");
      migrated.execute(c, request, conn -> StoredResponse.of(201, "{\"id\":1}"));
      assertThat(migrated.execute(c, request, conn -> StoredResponse.of(500, "")).replayed()).isTrue();
      st.execute("DROP TABLE idem_keys");
    }
  }
}
