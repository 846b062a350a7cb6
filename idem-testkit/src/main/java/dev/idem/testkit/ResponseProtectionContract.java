package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.Outcome;
import dev.idem.core.ResponseProtection;
import dev.idem.core.StoredResponse;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.jdbc.JdbcIdempotency;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/**
 * Part of the {@linkplain TransactionalContract transactional contract}: responses protected at
 * rest ({@link dev.idem.core.ResponseProtection}): never stored in clear, replayed after key
 * rotation, refused (not replayed) when moved or under an unknown key.
 *
 * <p>A store's test runs it by subclassing (usually as a JUnit {@code @Nested} class, see {@link
 * TransactionalContract}) and returning its database and write order from {@link #target()}.
 */
public abstract class ResponseProtectionContract extends TransactionalContract {

  private JdbcIdempotency protectedBy(ResponseProtection protection) {
    return builder().table(idem.table()).responseProtection(protection).build();
  }

  private Outcome createSecret(JdbcIdempotency engine, IdempotentRequest request, String secret) throws SQLException {
    try (Connection c = database().open()) {
      return engine.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        invocations.incrementAndGet();
        long id = effects.insert(conn, "t", secret);
        return StoredResponse.builder(201).header("Location", "/things/" + secret)
            .body("{\"id\":" + id + ",\"secret\":\"" + secret + "\"}").build();
      });
    }
  }

  /** @return the response column's bytes, after checking that a protected record has no clear status */
  private byte[] rawResponse(IdempotentRequest request) throws SQLException {
    try (Connection c = database().open();
        PreparedStatement ps = c.prepareStatement(
            "SELECT response, status FROM " + idem.table() + " WHERE principal = ? AND operation = ? AND idem_key = ?")) {
      ps.setString(1, request.scope().principal());
      ps.setString(2, request.scope().operation());
      ps.setString(3, request.key().value());
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("a record").isTrue();
        byte[] response = rs.getBytes(1);
        rs.getInt(2);
        if (ResponseProtection.isProtected(response)) {
          assertThat(rs.wasNull()).as("a protected record leaves the clear-text status column empty").isTrue();
        }
        return response;
      }
    }
  }

  private void writeRawResponse(IdempotentRequest request, byte[] bytes) throws SQLException {
    try (Connection c = database().open();
        PreparedStatement ps = c.prepareStatement(
            "UPDATE " + idem.table() + " SET response = ? WHERE principal = ? AND operation = ? AND idem_key = ?")) {
      ps.setBytes(1, bytes);
      ps.setString(2, request.scope().principal());
      ps.setString(3, request.scope().operation());
      ps.setString(4, request.key().value());
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }

  @Test
  void theStatusOfAProtectedResponseIsReadAndAnUnreadableOneIsRefused() throws Exception {
    IdempotentRequest request = request("alice", "k-status-secret", "{}");
    createSecret(protectedBy(TestKeyrings.KEY_A), request, "s");
    try (Connection c = database().open()) {
      assertThat(((KeyStatus.Completed) protectedBy(TestKeyrings.KEY_A).status(c, request.scope(), request.key())).status()).isEqualTo(201);
      assertThatThrownBy(() -> protectedBy(TestKeyrings.ONLY_KEY_B).status(c, request.scope(), request.key()))
          .isInstanceOf(StoredResponseUnreadableException.class);
    }
  }

  @Test
  void protectedResponsesAreNotStoredInClearAndReplayExactly() throws Exception {
    JdbcIdempotency engine = protectedBy(TestKeyrings.KEY_A);
    IdempotentRequest request = request("alice", "k-secret", "{\"value\":1}");
    String secret = "secret" + suffix;
    Outcome first = createSecret(engine, request, secret);

    byte[] raw = rawResponse(request);
    assertThat(ResponseProtection.isProtected(raw)).isTrue();
    assertThat(new String(raw, StandardCharsets.ISO_8859_1)).doesNotContain(secret).doesNotContain("/things/");
    Outcome replay = createSecret(engine, request, "must-not-run");
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(first.response());
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void recordsProtectedWithTheOldKeyReplayAfterRotationWhileTheOldKeyIsKept() throws Exception {
    IdempotentRequest request = request("alice", "k-rotate", "{\"value\":1}");
    Outcome first = createSecret(protectedBy(TestKeyrings.KEY_A), request, "one");

    JdbcIdempotency rotated = protectedBy(TestKeyrings.KEYS_A_B_CURRENT_B);
    Outcome replay = createSecret(rotated, request, "must-not-run");
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(first.response());

    IdempotentRequest next = request("alice", "k-rotate-2", "{\"value\":2}");
    Outcome written = createSecret(rotated, next, "two");
    byte[] raw = rawResponse(next);
    assertThat(new String(raw, 3, raw[2], StandardCharsets.US_ASCII)).as("new records use the current key").isEqualTo("b");
    assertThat(createSecret(rotated, next, "must-not-run").response()).isEqualTo(written.response());
    assertThat(effectCount()).isEqualTo(2);
  }

  @Test
  void aProtectedResponseMovedToAnotherKeyIsRefusedNotReplayed() throws Exception {
    JdbcIdempotency engine = protectedBy(TestKeyrings.KEY_A);
    IdempotentRequest source = request("alice", "k-source", "{\"value\":1}");
    IdempotentRequest target = request("alice", "k-target", "{\"value\":1}");
    createSecret(engine, source, "source");
    createSecret(engine, target, "target");

    writeRawResponse(target, rawResponse(source));

    assertThatThrownBy(() -> createSecret(engine, target, "must-not-run"))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("failed authentication");
    try (Connection c = database().open()) {
      assertThatThrownBy(() -> engine.replay(c, target)).isInstanceOf(StoredResponseUnreadableException.class);
    }
    assertThat(createSecret(engine, source, "must-not-run").replayed()).as("the source is intact").isTrue();
    assertThat(effectCount()).as("the moved record's effect never runs again").isEqualTo(2);
    assertThat(invocations).hasValue(2);
  }

  @Test
  void aProtectedResponseUnderAnUnknownKeyIdIsRefusedNotReplayed() throws Exception {
    IdempotentRequest request = request("alice", "k-unknown", "{\"value\":1}");
    createSecret(protectedBy(TestKeyrings.KEY_A), request, "a");

    assertThatThrownBy(() -> createSecret(protectedBy(TestKeyrings.ONLY_KEY_B), request, "must-not-run"))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("key id 'a'");
    assertThatThrownBy(() -> createSecret(idem, request, "must-not-run"))
        .as("protection turned off while protected records live")
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("protection is off");
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void plaintextRecordsWrittenBeforeProtectionStillReplay() throws Exception {
    IdempotentRequest request = request("alice", "k-before", "{\"value\":1}");
    Outcome first = createSecret(idem, request, "clear");
    assertThat(ResponseProtection.isProtected(rawResponse(request))).isFalse();

    Outcome replay = createSecret(protectedBy(TestKeyrings.KEY_A), request, "must-not-run");
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(first.response());
    assertThat(effectCount()).isEqualTo(1);
  }
}
