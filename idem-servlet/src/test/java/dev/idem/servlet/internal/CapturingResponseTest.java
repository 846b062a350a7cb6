package dev.idem.servlet.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import jakarta.servlet.http.HttpServletResponse;
import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
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
}
