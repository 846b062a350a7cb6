package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseContext;
import dev.idem.testkit.TestDatabase;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.net.http.HttpRequest.BodyPublishers;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link IdempotencyFilter#connection} and {@link IdempotencyFilter#leaseContext}: what a handler
 * finds through them in each mode, the same objects as the request attributes they read, which
 * stay for code that reads them directly.
 */
class IdempotencyFilterAccessorsTest {

  @RegisterExtension static final TestDatabase SQLITE = TestDatabase.sqlite();

  /** Records what the accessors give while it runs. */
  static final class Handler extends HttpServlet {
    volatile Optional<Connection> connection;
    volatile Optional<LeaseContext> lease;
    volatile Object connectionAttribute;
    volatile Object leaseAttribute;
    volatile Integer selected;

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse res) {
      connection = IdempotencyFilter.connection(req);
      lease = IdempotencyFilter.leaseContext(req);
      connectionAttribute = req.getAttribute(IdempotencyFilter.CONNECTION_ATTRIBUTE);
      leaseAttribute = req.getAttribute(IdempotencyFilter.LEASE_CONTEXT_ATTRIBUTE);
      if (connection.isPresent()) {
        try (Statement st = connection.get().createStatement(); ResultSet rs = st.executeQuery("SELECT 1")) {
          rs.next();
          selected = rs.getInt(1);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }
      res.setStatus(201);
    }
  }

  Handler post(IdempotencyFilterConfig config, String path, String key) throws Exception {
    Handler handler = new Handler();
    try (TestServer server = new TestServer(config, handler)) {
      var request = server.request(path).header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}"));
      if (key != null) {
        request.header("Idempotency-Key", key);
      }
      assertThat(server.send(request.build()).statusCode()).isEqualTo(201);
    }
    return handler;
  }

  @Test
  void transactionalModeGivesTheTransactionsConnectionAndNoLease() throws Exception {
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(
        new TransactionalConformance(SQLITE.target().dataSource()).engine(Set.of())).required("POST", "/notes").build();
    Handler seen = post(config, "/notes", "tx-1");
    assertThat(seen.connection).containsSame((Connection) seen.connectionAttribute);
    assertThat(seen.selected).as("the handler can use it").isEqualTo(1);
    assertThat(seen.lease).isEmpty();
    assertThat(seen.leaseAttribute).isNull();
  }

  @Test
  void leaseModeGivesTheClaimAndNoConnection() throws Exception {
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).required("POST", "/notes").build();
    Handler seen = post(config, "/notes", "lease-1");
    assertThat(seen.lease).containsSame((LeaseContext) seen.leaseAttribute);
    assertThat(seen.lease.orElseThrow().key().value()).isEqualTo("lease-1");
    assertThat(seen.connection).isEmpty();
  }

  @Test
  void aRequestTheFilterDoesNotProtectHasNeither() throws Exception {
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).optional("POST", "/notes").build();
    Handler unrouted = post(config, "/other", "k-1");
    Handler keyless = post(config, "/notes", null);
    for (Handler seen : new Handler[] {unrouted, keyless}) {
      assertThat(seen.connection).isEmpty();
      assertThat(seen.lease).isEmpty();
    }
  }

  @Test
  void aNullRequestIsRefused() {
    assertThatThrownBy(() -> IdempotencyFilter.connection(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> IdempotencyFilter.leaseContext(null)).isInstanceOf(NullPointerException.class);
  }
}
