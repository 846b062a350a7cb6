package dev.idem.servlet;

import dev.idem.core.LeaseContext;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The application behind the filter: one behaviour per path, each counting its invocations, so
 * tests can tell a replay (no new invocation) from a run.
 */
final class TestApp extends HttpServlet {

  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
  private final AtomicInteger ids = new AtomicInteger();
  /** /slow counts this down when it has started, then waits for {@link #release}. */
  volatile CountDownLatch started = new CountDownLatch(1);
  volatile CountDownLatch release = new CountDownLatch(1);
  /** The lease context of the last request that had one. */
  private volatile LeaseContext lastLeaseContext;

  /**
   * The body of {@code /sized}: {@code n} bytes, starting with {@code "run <call>\n"} (cut if
   * {@code n} is shorter), then the letters a to z over and over.
   */
  static byte[] sized(int call, int n) {
    byte[] prefix = ("run " + call + "\n").getBytes(StandardCharsets.US_ASCII);
    byte[] out = new byte[n];
    for (int i = 0; i < n; i++) {
      out[i] = i < prefix.length ? prefix[i] : (byte) ('a' + i % 26);
    }
    return out;
  }

  int calls(String path) {
    AtomicInteger n = calls.get(path);
    return n == null ? 0 : n.get();
  }

  LeaseContext lastLeaseContext() {
    return lastLeaseContext;
  }

  int totalCalls() {
    return calls.values().stream().mapToInt(AtomicInteger::get).sum();
  }

  @Override
  protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
    String path = req.getPathInfo() == null ? req.getServletPath() : req.getServletPath() + req.getPathInfo();
    int call = calls.computeIfAbsent(req.getMethod() + " " + path, k -> new AtomicInteger()).incrementAndGet();
    byte[] body = req.getInputStream().readAllBytes();
    LeaseContext lease = (LeaseContext) req.getAttribute(IdempotencyFilter.LEASE_CONTEXT_ATTRIBUTE);
    String key = lease == null ? "" : lease.key().value();
    if (lease != null) {
      lastLeaseContext = lease;
    }
    switch (req.getMethod().equals("GET") ? "GET" : path) {
      case "/notes", "/required", "/notes/1", "/notes/2" -> {
        int id = ids.incrementAndGet();
        res.setStatus(201);
        res.setHeader("Location", "/notes/" + id);
        res.setHeader("ETag", "\"v" + id + "\"");
        res.setHeader("X-Not-Replayed", "debug-" + id);
        res.addCookie(new Cookie("session", "s" + id));
        res.setHeader("Cache-Control", "no-store");
        res.setContentType("application/json");
        String user = req.getUserPrincipal() == null ? "" : req.getUserPrincipal().getName();
        String json = "{\"id\":" + id + ",\"user\":\"" + user + "\",\"key\":" + jsonString(key)
            + ",\"body\":" + jsonString(new String(body, StandardCharsets.UTF_8)) + "}";
        res.getOutputStream().write(json.getBytes(StandardCharsets.UTF_8));
      }
      case "/missing" -> {
        res.setStatus(404);
        res.setContentType("application/json");
        res.getWriter().write("{\"error\":\"no note " + ids.incrementAndGet() + "\"}");
      }
      case "/gone" -> res.sendError(410, "note " + ids.incrementAndGet() + " was deleted");
      case "/redirect" -> res.sendRedirect("/notes/" + ids.incrementAndGet());
      case "/stream" -> {
        res.setContentType("text/plain;charset=UTF-8");
        PrintWriter w = res.getWriter();
        int id = ids.incrementAndGet();
        for (int i = 0; i < 200; i++) {
          w.print("chunk " + i + " of run " + id + " \u00e9\u20ac " + "x".repeat(i % 37) + "\n");
          w.flush();
          if (i % 50 == 0) {
            res.flushBuffer();
          }
        }
      }
      case "/flush-then-throw" -> {
        res.getOutputStream().write("partial".getBytes(StandardCharsets.US_ASCII));
        res.flushBuffer();
        if (!res.isCommitted()) {
          throw new AssertionError("the capture should look committed after flushBuffer");
        }
        if (call == 1) {
          throw new IllegalStateException("handler failure after flush");
        }
      }
      case "/downstream-unknown" -> {
        if (call == 1) {
          // the handler called another service with Idem's HTTP client, whose retries ran out
          throw dev.idem.core.OutcomeUnknownException.clientRetriesExhausted(dev.idem.core.IdempotencyKey.of("downstream-1"), 3,
              503, "no attempts left", null, java.time.Duration.ofSeconds(7), null);
        }
        res.setStatus(201);
        res.getWriter().write("created on run " + call);
      }
      case "/boom" -> {
        if (call == 1) {
          throw new IllegalStateException("the first run fails");
        }
        res.setStatus(201);
        res.getWriter().write("created on run " + call);
      }
      case "/fail500" -> {
        res.setStatus(500);
        res.getWriter().write("server error on run " + call);
      }
      case "/form" -> {
        res.setContentType("text/plain;charset=UTF-8");
        res.getWriter().write("title=" + req.getParameter("title") + " run=" + call);
      }
      case "/slow" -> {
        awaitRelease();
        res.setStatus(201);
        res.getWriter().write("slow done " + ids.incrementAndGet());
      }
      case "/sized" -> {
        // ?bytes=N&mode=stream|writer[&pause=K][&status=S][&fail=true]: N bytes of sized(call,
        // N), in pieces of 1000 bytes, flushed every 10 pieces, with status S (201 by default);
        // with pause, after K bytes the handler flushes and waits for release; with fail, it
        // throws after writing them.
        int n = Integer.parseInt(req.getParameter("bytes"));
        boolean writer = "writer".equals(req.getParameter("mode"));
        int pause = req.getParameter("pause") == null ? -1 : Integer.parseInt(req.getParameter("pause"));
        byte[] all = sized(call, n);
        res.setStatus(req.getParameter("status") == null ? 201 : Integer.parseInt(req.getParameter("status")));
        res.setContentType(writer ? "text/plain;charset=UTF-8" : "application/octet-stream");
        res.setHeader("Location", "/sized/" + call);
        res.setHeader("X-Run", Integer.toString(call));
        res.addCookie(new Cookie("sized", "c" + call));
        OutputStream out = writer ? null : res.getOutputStream();
        PrintWriter w = writer ? res.getWriter() : null;
        if (pause >= 0) {
          writeSized(all, 0, pause, out, w);
          if (writer) {
            w.flush();
          } else {
            out.flush();
          }
          awaitRelease();
          writeSized(all, pause, n, out, w);
        } else {
          writeSized(all, 0, n, out, w);
        }
        if ("true".equals(req.getParameter("fail"))) {
          throw new IllegalStateException("the handler fails after writing " + n + " bytes");
        }
      }
      case "/sets-key" -> {
        // a handler that sets the response's Idempotency-Key itself (to another value)
        res.setStatus(201);
        res.setHeader("Idempotency-Key", "set-by-handler-" + call);
        res.getWriter().write("created on run " + call);
      }
      case "/echo" -> {
        res.setContentType("application/octet-stream");
        res.getOutputStream().write(body);
      }
      default -> {
        res.setStatus(200);
        res.addCookie(new Cookie("plain", "p" + call));
        res.getWriter().write(req.getMethod() + " " + path + " run " + call);
      }
    }
  }

  /** Writes {@code all[from, to)} in pieces of 1000 bytes, flushing after every tenth. */
  private static void writeSized(byte[] all, int from, int to, OutputStream out, PrintWriter w) throws IOException {
    int pieces = 0;
    for (int off = from; off < to; off += 1000) {
      int len = Math.min(1000, to - off);
      if (w != null) {
        w.write(new String(all, off, len, StandardCharsets.US_ASCII)); // ASCII: one byte per character
      } else {
        out.write(all, off, len);
      }
      if (++pieces % 10 == 0) {
        if (w != null) {
          w.flush();
        } else {
          out.flush();
        }
      }
    }
  }

  /** Counts {@link #started} down, then waits up to 20 s for {@link #release}. */
  private void awaitRelease() {
    started.countDown();
    try {
      if (!release.await(20, TimeUnit.SECONDS)) {
        throw new IllegalStateException("never released");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static String jsonString(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }
}
