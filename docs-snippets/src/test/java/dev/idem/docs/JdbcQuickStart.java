package dev.idem.docs;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import jakarta.servlet.ServletContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;

/** The README's plain-Java quick start and the servlet filter without Spring; run by {@link QuickStartTest}. */
final class JdbcQuickStart {

  private JdbcQuickStart() {}

  static Outcome createNote(DataSource dataSource, String userId, String idempotencyKeyHeader, byte[] requestBody,
      String title) throws SQLException {
    // tag::execute[]
    JdbcIdempotency idem = JdbcIdempotency.builder()  // once per application; thread-safe
        .retention(Duration.ofHours(24))              // how long a key is remembered
        .build();                                     // table idem_keys, created on first use

    IdempotentRequest request = new IdempotentRequest(
        Scope.of(userId, "POST /notes"),              // from authentication and routing, never the body
        IdempotencyKey.of(idempotencyKeyHeader),
        Fingerprint.ofJson(requestBody));             // the body's bytes as canonical JSON (RFC 8785), SHA-256

    Outcome outcome;
    try (Connection connection = dataSource.getConnection()) {  // auto-commit: Idem commits
      outcome = idem.execute(connection, request, ctx -> {
        long id = insertNote(ctx.connection(), title); // the effect, on the same connection and transaction
        return StoredResponse.builder(201).header("Location", "/notes/" + id).body("{\"id\":" + id + "}").build();
      });
    }
    outcome.replayed();                               // true when the response came from the store
    outcome.response().status();                      // 201 both times; headers(), body(), bodyAsString()
    // end::execute[]
    return outcome;
  }

  static void filter(ServletContext servletContext, DataSource dataSource) {
    // tag::filter[]
    IdempotencyEngine engine = TransactionalIdempotency.onDataSource(
        JdbcIdempotency.builder().build(), dataSource, IdemListener.NONE);
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(engine)
        .route("POST", "/notes", KeyRequirement.REQUIRED)
        .build();
    servletContext.addFilter("idempotency", new IdempotencyFilter(config))
        .addMappingForUrlPatterns(null, false, "/*");
    // the handler writes on IdempotencyFilter.connection(request), the transaction's Connection
    // end::filter[]
  }

  static long insertNote(Connection c, String title) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO notes (title) VALUES (?) RETURNING id")) {
      ps.setString(1, title);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
