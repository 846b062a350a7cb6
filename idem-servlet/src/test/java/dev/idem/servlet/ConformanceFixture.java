package dev.idem.servlet;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fixture API of the anyonce conformance vectors ({@code schema.json}, {@code fixture}), behind
 * the filter in {@link dev.idem.testkit.conformance.AnyonceConformance}:
 *
 * <ul>
 *   <li>{@code POST /echo}: 201 with the request body, {@code text/plain};
 *   <li>{@code POST /status/{code}}: that status with the body {@code status:{code}};
 *   <li>{@code POST /slow?ms=N}: sleeps N ms, then 200 with {@code slept:N};
 *   <li>{@code POST /large?bytes=N}: 200 with N bytes;
 *   <li>{@code GET /counter}: 200 with {@code {"count":N}}, N the handler invocations so far;
 *   <li>{@code POST /reset}: sets the count to 0, 204.
 * </ul>
 *
 * The four POST handlers each count one invocation when they run; {@code /counter} and {@code
 * /reset} count none.
 */
final class ConformanceFixture extends HttpServlet {

  private static final Pattern STATUS = Pattern.compile("/status/([1-5][0-9][0-9])");

  private final AtomicInteger invocations = new AtomicInteger();

  /** @return how many times a handler ran since the last reset */
  int invocations() {
    return invocations.get();
  }

  @Override
  protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
    String path = req.getPathInfo() == null ? req.getServletPath() : req.getServletPath() + req.getPathInfo();
    String method = req.getMethod();
    byte[] body = req.getInputStream().readAllBytes();
    Matcher status = STATUS.matcher(path);
    if (method.equals("GET") && path.equals("/counter")) {
      res.setStatus(200);
      res.setContentType("application/json");
      write(res, "{\"count\":" + invocations.get() + "}");
    } else if (method.equals("POST") && path.equals("/reset")) {
      invocations.set(0);
      res.setStatus(204);
    } else if (method.equals("POST") && path.equals("/echo")) {
      invocations.incrementAndGet();
      res.setStatus(201);
      res.setContentType("text/plain;charset=UTF-8");
      res.getOutputStream().write(body);
    } else if (method.equals("POST") && status.matches()) {
      invocations.incrementAndGet();
      int code = Integer.parseInt(status.group(1));
      res.setStatus(code);
      res.setContentType("text/plain;charset=UTF-8");
      write(res, "status:" + code);
    } else if (method.equals("POST") && path.equals("/slow")) {
      invocations.incrementAndGet();
      long ms = Long.parseLong(req.getParameter("ms"));
      try {
        Thread.sleep(ms);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while sleeping", e);
      }
      res.setStatus(200);
      res.setContentType("text/plain;charset=UTF-8");
      write(res, "slept:" + ms);
    } else if (method.equals("POST") && path.equals("/large")) {
      invocations.incrementAndGet();
      int bytes = Integer.parseInt(req.getParameter("bytes"));
      res.setStatus(200);
      res.setContentType("application/octet-stream");
      OutputStream out = res.getOutputStream();
      byte[] chunk = new byte[8192];
      Arrays.fill(chunk, (byte) 'x');
      for (int off = 0; off < bytes; off += chunk.length) {
        out.write(chunk, 0, Math.min(chunk.length, bytes - off));
      }
    } else {
      res.setStatus(404);
      res.setContentType("text/plain;charset=UTF-8");
      write(res, "no fixture route " + method + " " + path);
    }
  }

  private static void write(HttpServletResponse res, String text) throws IOException {
    res.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
  }
}
