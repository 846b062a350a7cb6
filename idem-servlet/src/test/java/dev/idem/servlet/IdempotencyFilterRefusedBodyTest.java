package dev.idem.servlet;

import static dev.idem.servlet.IdempotencyFilterTest.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import jakarta.servlet.Filter;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.io.IOException;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A body over the limit is refused with 413 after what is left of it has been read (up to {@link
 * IdempotencyFilter#SWALLOW_BYTES}): a server that answers and closes with request bytes unread
 * makes its TCP stack send a reset, and the client, still sending, loses the 413.
 */
class IdempotencyFilterRefusedBodyTest {

  final AtomicLong read = new AtomicLong();
  TestServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  /** Counts the bytes anything behind it reads from the request body. */
  Filter counting() {
    return (request, response, chain) -> chain.doFilter(new HttpServletRequestWrapper((HttpServletRequest) request) {
      @Override
      public ServletInputStream getInputStream() throws IOException {
        ServletInputStream in = super.getInputStream();
        return new ServletInputStream() {
          @Override
          public int read() throws IOException {
            int b = in.read();
            if (b >= 0) {
              read.incrementAndGet();
            }
            return b;
          }

          @Override
          public int read(byte[] buf, int off, int len) throws IOException {
            int n = in.read(buf, off, len);
            if (n > 0) {
              read.addAndGet(n);
            }
            return n;
          }

          @Override
          public boolean isFinished() {
            return in.isFinished();
          }

          @Override
          public boolean isReady() {
            return in.isReady();
          }

          @Override
          public void setReadListener(ReadListener listener) {
            in.setReadListener(listener);
          }
        };
      }
    }, response);
  }

  HttpResponse<byte[]> post(String body) throws Exception {
    return server.send(server.request("/notes").header("Idempotency-Key", "big").header("Content-Type", "application/json")
        .POST(BodyPublishers.ofString(body)).build());
  }

  @Test
  void aBodyJustOverTheLimitIsReadToItsEndBeforeThe413SoTheAnswerIsNotLostToAReset() throws Exception {
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).optional("POST", "/**")
        .maxBodyBytes(1024).build();
    TestApp app = new TestApp();
    server = new TestServer(config, app, null, counting());
    String body = "\"" + "x".repeat(5000) + "\"";

    HttpResponse<byte[]> refused = post(body); // announced by Content-Length
    assertProblem(refused, 413, IdempotencyFilter.PROBLEM_BODY_TOO_LARGE);
    assertThat(read.get()).isEqualTo(body.length());
    assertThat(app.calls("POST /notes")).isZero();
  }

  @Test
  void aBodyFarOverTheLimitIsLeftToTheContainerAfterABoundedRead() throws Exception {
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).optional("POST", "/**")
        .maxBodyBytes(1024).build();
    server = new TestServer(config, new TestApp(), null, counting());
    String body = "\"" + "x".repeat(4 * RequestReader.SWALLOW_BYTES) + "\"";

    try {
      post(body);
    } catch (IOException reset) {
      // the container may close the connection on the rest of the body; either way the filter read a bounded amount
    }
    assertThat(read.get()).isEqualTo(RequestReader.SWALLOW_BYTES + 1); // and one byte more, which tells that more is left
  }
}
