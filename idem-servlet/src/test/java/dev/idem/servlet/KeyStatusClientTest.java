package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.HttpOperation;
import dev.idem.client.IdempotentHttpClient;
import dev.idem.client.OperationResult;
import dev.idem.client.ServerKeyStatus;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.OutcomeUnknownException;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link IdempotentHttpClient} with {@link IdempotentHttpClient.Builder#keyStatus} against the
 * filter and {@link KeyStatusEndpoint} on Jetty: after an attempt whose answer never came, the
 * client asks the endpoint and resends at once (completed: the stored answer is replayed; unknown:
 * the operation runs), or after the server's hint (in progress), never after its long backoff.
 */
class KeyStatusClientTest {

  /** A backoff far longer than any test here may take: a resend that waits for it fails the test. */
  private static final Duration LONG_BACKOFF = Duration.ofSeconds(20);

  private final InMemoryLeaseStore store = new InMemoryLeaseStore();
  private final AtomicInteger statusReads = new AtomicInteger();
  private final KeyStatusReader counted = (scope, key) -> {
    statusReads.incrementAndGet();
    return store.status(scope, key);
  };
  private final TestApp app = new TestApp();
  private TestServer server;

  @AfterEach
  void stop() {
    app.release.countDown();
    if (server != null) {
      server.close();
    }
  }

  /** What happens to the first POST: its answer is lost after it ran, or it never reaches the filter. */
  enum FirstPost { ANSWER_LOST, DROPPED, NORMAL }

  /** Loses the first POST's answer (after the handler and the store) or the whole request, by outlasting the client's timeout. */
  static final class Faults implements Filter {
    final FirstPost mode;
    final AtomicInteger posts = new AtomicInteger();

    Faults(FirstPost mode) {
      this.mode = mode;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
      boolean first = "POST".equals(((HttpServletRequest) request).getMethod()) && posts.incrementAndGet() == 1;
      if (!first || mode == FirstPost.NORMAL) {
        chain.doFilter(request, response);
        return;
      }
      if (mode == FirstPost.ANSWER_LOST) {
        chain.doFilter(request, new Discarding((HttpServletResponse) response));
      }
      try {
        Thread.sleep(1500); // the client's attempt timeout (500 ms) passes: for it, the answer is lost
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** A response whose every byte and header field is thrown away. */
  static final class Discarding extends HttpServletResponseWrapper {
    Discarding(HttpServletResponse response) {
      super(response);
    }

    @Override
    public ServletOutputStream getOutputStream() {
      return new ServletOutputStream() {
        @Override
        public boolean isReady() {
          return true;
        }

        @Override
        public void setWriteListener(WriteListener listener) {}

        @Override
        public void write(int b) {}
      };
    }

    @Override
    public PrintWriter getWriter() {
      return new PrintWriter(OutputStream.nullOutputStream());
    }

    @Override public void setStatus(int sc) {}
    @Override public void sendError(int sc) {}
    @Override public void sendError(int sc, String msg) {}
    @Override public void sendRedirect(String location) {}
    @Override public void setHeader(String name, String value) {}
    @Override public void addHeader(String name, String value) {}
    @Override public void setIntHeader(String name, int value) {}
    @Override public void addIntHeader(String name, int value) {}
    @Override public void setDateHeader(String name, long date) {}
    @Override public void addDateHeader(String name, long date) {}
    @Override public void addCookie(Cookie cookie) {}
    @Override public void setContentType(String type) {}
    @Override public void setContentLength(int len) {}
    @Override public void setContentLengthLong(long len) {}
    @Override public void setCharacterEncoding(String charset) {}
    @Override public void flushBuffer() {}
    @Override public void resetBuffer() {}
    @Override public void reset() {}

    @Override
    public boolean isCommitted() {
      return false;
    }
  }

  private void start(FirstPost mode) throws Exception {
    LeaseIdempotency engine = LeaseIdempotency.builder(store).lease(Duration.ofSeconds(30)).retention(Duration.ofMinutes(10)).build();
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(engine).required("POST", "/notes").required("POST", "/slow").build();
    server = new TestServer(config, app, null, new KeyStatusEndpoint(config, counted), new Faults(mode));
  }

  private IdempotentHttpClient client(int maxAttempts, boolean askStatus) {
    IdempotentHttpClient.Builder b = IdempotentHttpClient.builder(HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build())
        .retryPolicy(ClientRetryPolicy.builder().maxAttempts(maxAttempts).attemptTimeout(Duration.ofMillis(500))
            .baseDelay(LONG_BACKOFF).maxDelay(LONG_BACKOFF).maxDuration(Duration.ofSeconds(60)).build())
        .random(() -> 0.999);
    if (askStatus) {
      b.keyStatus(server.uri(KeyStatusEndpoint.DEFAULT_PATH));
    }
    return b.build();
  }

  private HttpOperation save(String path, String user) {
    return HttpOperation.builder("POST", server.uri(path)).header("Content-Type", "application/json")
        .header(TestServer.USER_HEADER, user).body("{\"title\":\"milk\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8)).build();
  }

  @Test
  void aLostAnswerIsSettledAsCompletedAndTheResendAtOnceGetsTheStoredAnswer() throws Exception {
    start(FirstPost.ANSWER_LOST);
    long began = System.nanoTime();
    OperationResult result = client(3, true).send(save("/notes", "alice"));
    Duration took = Duration.ofNanos(System.nanoTime() - began);
    assertThat(result.status()).isEqualTo(201);
    assertThat(result.replayed()).as("the resend got the stored answer").isTrue();
    assertThat(result.attempts()).isEqualTo(2);
    assertThat(app.calls("POST /notes")).as("the note was made once").isEqualTo(1);
    assertThat(statusReads).as("one status read after the lost answer").hasValue(1);
    assertThat(took).as("no backoff of " + LONG_BACKOFF + " before the resend").isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void aRequestThatNeverArrivedIsSettledAsNotFoundAndResentAtOnce() throws Exception {
    start(FirstPost.DROPPED);
    long began = System.nanoTime();
    OperationResult result = client(3, true).send(save("/notes", "alice"));
    assertThat(result.status()).isEqualTo(201);
    assertThat(result.replayed()).as("nothing was recorded: the resend ran it").isFalse();
    assertThat(app.calls("POST /notes")).isEqualTo(1);
    assertThat(statusReads).hasValue(1);
    assertThat(Duration.ofNanos(System.nanoTime() - began)).isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void anAttemptStillRunningIsWaitedForByTheServersHintNotTheBackoff() throws Exception {
    start(FirstPost.NORMAL);
    CompletableFuture<OperationResult> sent = CompletableFuture.supplyAsync(() -> {
      try {
        return client(10, true).send(save("/slow", "alice"));
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(app.started.await(20, TimeUnit.SECONDS)).isTrue();
    Thread.sleep(1200); // the first attempt timed out; the client asked, heard in_progress, and waits the hint
    assertThat(statusReads.get()).isGreaterThanOrEqualTo(1);
    long released = System.nanoTime();
    app.release.countDown();
    OperationResult result = sent.get(30, TimeUnit.SECONDS);
    assertThat(result.status()).isEqualTo(201);
    assertThat(result.replayed()).isTrue();
    assertThat(app.calls("POST /slow")).isEqualTo(1);
    assertThat(Duration.ofNanos(System.nanoTime() - released)).as("resent within the server's 1 s hints").isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void whenTheAttemptsRunOutTheExceptionSaysWhatTheServerRecorded() throws Exception {
    start(FirstPost.ANSWER_LOST);
    HttpOperation save = save("/notes", "alice");
    IdempotentHttpClient client = client(1, true);
    OutcomeUnknownException e = org.assertj.core.api.Assertions.catchThrowableOfType(() -> client.send(save), OutcomeUnknownException.class);
    assertThat(e.serverStatus(ServerKeyStatus.class)).hasValueSatisfying(s -> {
      assertThat(s.state()).isEqualTo(ServerKeyStatus.State.COMPLETED);
      assertThat(s.status()).isEqualTo(201);
      assertThat(s.expiresAt()).isNotNull();
    });
    assertThat(e.getMessage()).contains("completed with status 201");
    OperationResult resumed = client.send(save.withKey(e.key()));
    assertThat(resumed.replayed()).isTrue();
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void keyStatusAsksAboutTheCallersOwnKeyWithItsHeaderFields() throws Exception {
    start(FirstPost.NORMAL);
    IdempotentHttpClient client = client(3, true);
    OperationResult saved = client.send(save("/notes", "alice"));
    ServerKeyStatus own = client.keyStatus(save("/notes", "alice"), saved.key());
    assertThat(own.state()).isEqualTo(ServerKeyStatus.State.COMPLETED);
    assertThat(own.status()).isEqualTo(201);
    assertThat(own.completedAt()).isNotNull();
    assertThat(client.keyStatus(save("/notes", "bob"), saved.key()).state()).as("bob's view of alice's key")
        .isEqualTo(ServerKeyStatus.State.NOT_FOUND);
    assertThatThrownBy(() -> client(3, false).keyStatus(save("/notes", "alice"), saved.key())).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> IdempotentHttpClient.builder(HttpClient.newHttpClient()).keyStatus(URI.create("/relative")))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
