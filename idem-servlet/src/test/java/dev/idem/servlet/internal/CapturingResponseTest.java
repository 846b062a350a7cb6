package dev.idem.servlet.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/** The capture imitates a container's response without ever touching the real one. */
class CapturingResponseTest {

  final List<String> realCalls = new ArrayList<>();

  /** A real response that records every call except the read-only defaults the capture may ask for. */
  HttpServletResponse real() {
    return (HttpServletResponse) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {HttpServletResponse.class},
        (proxy, method, args) -> switch (method.getName()) {
          case "getCharacterEncoding" -> "ISO-8859-1";
          case "getLocale" -> Locale.ROOT;
          case "hashCode" -> 1;
          case "equals" -> proxy == args[0];
          case "toString" -> "real";
          default -> {
            realCalls.add(method.getName());
            yield null;
          }
        });
  }

  @Test
  void nothingReachesTheRealResponseWhileCapturing() throws Exception {
    CapturingResponse r = new CapturingResponse(real(), "/notes");
    r.setStatus(201);
    r.setHeader("Location", "/notes/1");
    r.addHeader("Link", "</a>; rel=a");
    r.addHeader("link", "</b>; rel=b");
    r.setIntHeader("X-Count", 3);
    r.setDateHeader("Last-Modified", 0);
    r.setContentType("application/json");
    r.setCharacterEncoding("UTF-8");
    r.getOutputStream().write("{}".getBytes(StandardCharsets.US_ASCII));
    r.getOutputStream().flush();
    r.flushBuffer();
    assertThat(realCalls).isEmpty();
    assertThat(r.isCommitted()).isTrue();
    assertThat(r.getStatus()).isEqualTo(201);
    assertThat(r.getHeaders("LINK")).containsExactly("</a>; rel=a", "</b>; rel=b");
    assertThat(r.getHeader("last-modified")).isEqualTo("Thu, 01 Jan 1970 00:00:00 GMT");
    assertThat(r.getContentType()).isEqualTo("application/json;charset=UTF-8");
    assertThat(r.containsHeader("x-count")).isTrue();
    assertThat(r.getHeaderNames()).containsExactly("Content-Type", "Location", "Link", "X-Count", "Last-Modified");
    assertThat(r.body()).isEqualTo("{}".getBytes(StandardCharsets.US_ASCII));
  }

  @Test
  void afterCommitStatusAndHeadersAreIgnoredAndResetThrows() throws Exception {
    CapturingResponse r = new CapturingResponse(real(), "/x");
    r.getWriter().print("a");
    r.getWriter().flush();
    r.setStatus(500);
    r.setHeader("X-Late", "1");
    assertThat(r.getStatus()).isEqualTo(200);
    assertThat(r.containsHeader("X-Late")).isFalse();
    assertThatThrownBy(r::reset).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(r::resetBuffer).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> r.sendError(500)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> r.sendRedirect("/y")).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void resetClearsEverythingBeforeCommit() throws Exception {
    CapturingResponse r = new CapturingResponse(real(), "/x");
    r.setStatus(404);
    r.setHeader("ETag", "\"1\"");
    PrintWriter w = r.getWriter();
    w.print("discarded, still in the encoder");
    r.reset();
    assertThat(r.getStatus()).isEqualTo(200);
    assertThat(r.getHeaderNames()).isEmpty();
    r.getOutputStream().write('k'); // the writer choice was reset too
    assertThat(r.body()).containsExactly('k');
  }

  @Test
  void resetBufferDiscardsPendingWriterOutput() throws Exception {
    CapturingResponse r = new CapturingResponse(real(), "/x");
    r.getWriter().print("old");
    r.resetBuffer();
    r.getWriter().print("new");
    assertThat(new String(r.body(), StandardCharsets.ISO_8859_1)).isEqualTo("new");
  }

  @Test
  void writerAndStreamExcludeEachOther() throws Exception {
    CapturingResponse a = new CapturingResponse(real(), "/x");
    a.getWriter();
    assertThatThrownBy(a::getOutputStream).isInstanceOf(IllegalStateException.class);
    CapturingResponse b = new CapturingResponse(real(), "/x");
    b.getOutputStream();
    assertThatThrownBy(b::getWriter).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void writerEncodesWithTheChosenCharsetAndNamesIt() throws Exception {
    CapturingResponse r = new CapturingResponse(real(), "/x");
    r.setContentType("text/plain; charset=UTF-8");
    r.getWriter().print("\u20ac");
    r.setCharacterEncoding("ISO-8859-1"); // too late, ignored as by a container
    assertThat(r.body()).isEqualTo("\u20ac".getBytes(StandardCharsets.UTF_8));
    assertThat(r.getContentType()).isEqualTo("text/plain; charset=UTF-8");
    CapturingResponse latin = new CapturingResponse(real(), "/x");
    latin.setContentType("text/plain");
    latin.getWriter().print("\u00e9");
    assertThat(latin.getContentType()).isEqualTo("text/plain;charset=ISO-8859-1");
    assertThat(latin.body()).containsExactly((byte) 0xE9);
  }

  @Test
  void sendErrorMakesAProblemBodyAndDropsLaterOutput() throws Exception {
    CapturingResponse r = new CapturingResponse(real(), "/x");
    r.getWriter().print("lost");
    r.sendError(409, "taken");
    r.getWriter().print("after");
    assertThat(r.getStatus()).isEqualTo(409);
    assertThat(r.getContentType()).isEqualTo("application/problem+json");
    assertThat(new String(r.body(), StandardCharsets.UTF_8))
        .isEqualTo("{\"type\":\"about:blank\",\"title\":\"Conflict\",\"status\":409,\"detail\":\"taken\"}");
    assertThat(realCalls).isEmpty();
  }

  @Test
  void sendRedirectResolvesRelativeLocations() throws Exception {
    CapturingResponse r = new CapturingResponse(real(), "/notes/7/edit");
    r.sendRedirect("../8");
    assertThat(r.getStatus()).isEqualTo(302);
    assertThat(r.getHeader("Location")).isEqualTo("/notes/8");
    CapturingResponse abs = new CapturingResponse(real(), "/x");
    abs.sendRedirect("https://example.org/a");
    assertThat(abs.getHeader("Location")).isEqualTo("https://example.org/a");
  }

  @Test
  void contentLengthIsNeverTakenFromTheHandler() {
    CapturingResponse r = new CapturingResponse(real(), "/x");
    r.setContentLength(99);
    r.setHeader("Content-Length", "99");
    r.setHeader("Content-Type", "text/plain");
    assertThat(r.headerFields()).containsOnlyKeys("Content-Type");
  }

  // ---- the body limit -----------------------------------------------------------------------

  final ByteArrayOutputStream sent = new ByteArrayOutputStream();
  int realFlushes;

  /**
   * A real response that records every call with its arguments and whose output stream collects
   * the bytes sent in {@link #sent}.
   */
  HttpServletResponse realWithStream() {
    ServletOutputStream out = new ServletOutputStream() {
      @Override
      public void write(int b) {
        sent.write(b);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        sent.write(b, off, len);
      }

      @Override
      public void flush() {
        realFlushes++;
      }

      @Override
      public boolean isReady() {
        return true;
      }

      @Override
      public void setWriteListener(WriteListener listener) {}
    };
    return (HttpServletResponse) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {HttpServletResponse.class},
        (proxy, method, args) -> switch (method.getName()) {
          case "getCharacterEncoding" -> "ISO-8859-1";
          case "getLocale" -> Locale.ROOT;
          case "hashCode" -> 1;
          case "equals" -> proxy == args[0];
          case "toString" -> "real";
          case "getOutputStream" -> out;
          case "addCookie" -> {
            realCalls.add("addCookie " + ((Cookie) args[0]).getName());
            yield null;
          }
          default -> {
            realCalls.add(method.getName() + (args == null ? "" : " " + Arrays.toString(args)));
            yield null;
          }
        });
  }

  static byte[] bytes(int n, char c) {
    byte[] b = new byte[n];
    Arrays.fill(b, (byte) c);
    return b;
  }

  @Test
  void aBodyOfExactlyTheLimitStaysInMemory() throws Exception {
    CapturingResponse r = new CapturingResponse(realWithStream(), "/x", 10);
    r.getOutputStream().write(bytes(4, 'a'));
    r.getOutputStream().write(bytes(6, 'b'));
    r.getOutputStream().flush();
    r.finish();
    assertThat(r.overflowed()).isFalse();
    assertThat(r.body()).isEqualTo("aaaabbbbbb".getBytes(StandardCharsets.US_ASCII));
    assertThat(realCalls).isEmpty();
    assertThat(sent.size()).isZero();
  }

  @Test
  void theFirstByteOverTheLimitSendsHeadAndBufferThenStreams() throws Exception {
    CapturingResponse r = new CapturingResponse(realWithStream(), "/x", 10);
    r.setStatus(201);
    r.setHeader("Location", "/notes/1");
    r.setContentType("application/octet-stream");
    r.setContentLength(25);
    r.addCookie(new Cookie("s", "1"));
    r.getOutputStream().write(bytes(10, 'a'));
    assertThat(realCalls).isEmpty();

    r.getOutputStream().write('b'); // byte 11
    assertThat(r.overflowed()).isTrue();
    assertThat(r.isCommitted()).isTrue();
    assertThat(realCalls).containsExactly("setStatus [201]", "setContentType [application/octet-stream]",
        "addHeader [Location, /notes/1]", "addCookie s");
    assertThat(sent.toByteArray()).isEqualTo("aaaaaaaaaab".getBytes(StandardCharsets.US_ASCII));

    r.getOutputStream().write(bytes(14, 'c')); // straight through
    assertThat(sent.size()).isEqualTo(25);
    r.getOutputStream().flush();
    assertThat(realFlushes).isEqualTo(1);
    r.setStatus(500);
    r.setHeader("X-Late", "1");
    assertThat(realCalls).as("no Content-Length, no late changes").hasSize(4);
    assertThatThrownBy(r::resetBuffer).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(r::body).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> r.writeTo(realWithStream())).isInstanceOf(IllegalStateException.class);
  }

  /**
   * The length recorded for an answer too large to store is every byte the client got: held, then
   * streamed, the writer's last characters included, but not what a reset discarded.
   */
  @Test
  void bodyLengthCountsEveryByteSentButNotWhatAResetDiscarded() throws Exception {
    CapturingResponse r = new CapturingResponse(realWithStream(), "/x", 10);
    r.getWriter().write("discarded");
    r.resetBuffer();
    assertThat(r.bodyLength()).isZero();
    r.getWriter().write("0123456789abcdefghij");
    r.getWriter().write("xyz"); // still in the encoder until finish
    r.finish();
    assertThat(r.overflowed()).isTrue();
    assertThat(r.bodyLength()).isEqualTo(23);
    assertThat(sent.size()).isEqualTo(23);
  }

  @Test
  void aLargeWriteOverflowsBeforeItIsBuffered() throws Exception {
    CapturingResponse r = new CapturingResponse(realWithStream(), "/x", 100);
    r.getOutputStream().write(bytes(30, 'a'));
    r.getOutputStream().write(bytes(1000, 'b'));
    assertThat(r.overflowed()).isTrue();
    assertThat(sent.size()).isEqualTo(1030);
  }

  @Test
  void aLimitOfZeroOverflowsOnTheFirstByte() throws Exception {
    CapturingResponse r = new CapturingResponse(realWithStream(), "/x", 0);
    r.getOutputStream().write(new byte[0]);
    r.finish();
    assertThat(r.overflowed()).isFalse();
    assertThat(r.body()).isEmpty();
    r.getOutputStream().write('x');
    assertThat(r.overflowed()).isTrue();
    assertThat(sent.toByteArray()).containsExactly('x');
  }

  @Test
  void theWritersPendingCharactersOverflowAtFinish() throws Exception {
    CapturingResponse r = new CapturingResponse(realWithStream(), "/x", 10);
    r.setContentType("text/plain;charset=UTF-8");
    PrintWriter w = r.getWriter();
    w.print("0123456789\u20ac"); // 13 bytes, still in the encoder
    assertThat(r.overflowed()).isFalse();
    assertThat(realCalls).isEmpty();
    r.finish();
    assertThat(r.overflowed()).isTrue();
    assertThat(realCalls).containsExactly("setStatus [200]", "setContentType [text/plain;charset=UTF-8]");
    assertThat(sent.toByteArray()).isEqualTo("0123456789\u20ac".getBytes(StandardCharsets.UTF_8));
    assertThat(realFlushes).isEqualTo(1);
    w.print("more");
    w.flush(); // a real flush now
    assertThat(new String(sent.toByteArray(), StandardCharsets.UTF_8)).isEqualTo("0123456789\u20acmore");
    assertThat(realFlushes).isEqualTo(2);
  }

  @Test
  void flushBufferAfterAnOverflowFlushesTheWriterThrough() throws Exception {
    CapturingResponse r = new CapturingResponse(realWithStream(), "/x", 4);
    PrintWriter w = r.getWriter();
    w.print("abcdef");
    w.flush();
    assertThat(r.overflowed()).isTrue();
    w.print("gh");
    r.flushBuffer();
    assertThat(new String(sent.toByteArray(), StandardCharsets.ISO_8859_1)).isEqualTo("abcdefgh");
  }

  @Test
  void resettingPendingWriterOutputNeverOverflows() throws Exception {
    CapturingResponse r = new CapturingResponse(realWithStream(), "/x", 5);
    r.getWriter().print("far more than five bytes, all still in the encoder");
    r.resetBuffer();
    assertThat(r.overflowed()).isFalse();
    assertThat(realCalls).isEmpty();
    r.getWriter().print("ok");
    assertThat(r.body()).isEqualTo("ok".getBytes(StandardCharsets.ISO_8859_1));
  }

  @Test
  void aSendErrorBodyOverTheLimitOverflowsToo() throws Exception {
    CapturingResponse r = new CapturingResponse(realWithStream(), "/x", 10);
    r.sendError(409, "taken");
    assertThat(r.overflowed()).isTrue();
    assertThat(realCalls).containsExactly("setStatus [409]", "setContentType [application/problem+json]");
    assertThat(new String(sent.toByteArray(), StandardCharsets.UTF_8))
        .isEqualTo("{\"type\":\"about:blank\",\"title\":\"Conflict\",\"status\":409,\"detail\":\"taken\"}");
  }

  @Test
  void theBufferNeverGrowsPastTheLimit() throws Exception {
    BoundedBuffer buffer = new BoundedBuffer(1000);
    for (int i = 0; i < 999; i++) {
      buffer.write('a');
    }
    buffer.write(new byte[] {'b'}, 0, 1);
    assertThat(buffer.size()).isEqualTo(1000);
    assertThat(buffer.capacity()).isEqualTo(1000);
    assertThatThrownBy(() -> buffer.write('c')).isInstanceOf(IllegalStateException.class);
    buffer.release();
    assertThat(buffer.capacity()).isZero();
  }
}
