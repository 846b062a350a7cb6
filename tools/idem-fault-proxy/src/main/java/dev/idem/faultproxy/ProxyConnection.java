package dev.idem.faultproxy;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;

/**
 * Serves one client connection of a {@link FaultProxy}: reads its requests one at a time, applies
 * each request's fault, and forwards it over this connection's own upstream connection. Runs on
 * one thread; not thread-safe, and needs none (the proxy only closes its sockets from elsewhere).
 */
final class ProxyConnection implements Runnable {

  private static final byte[] CONTINUE =
      "HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);
  /** How long a closing connection keeps reading what the client still sends, in milliseconds. */
  private static final int LINGER_MILLIS = 2000;
  /** The most 1xx responses accepted before a final response. */
  private static final int MAX_INTERIM_RESPONSES = 32;
  private static final int BUFFER = 16 * 1024;

  private final FaultProxy proxy;
  private final Socket client;
  private Socket upstream;
  private InputStream upstreamIn;
  private OutputStream upstreamOut;
  /** Whether the current upstream connection may carry another request. */
  private boolean upstreamReusable;
  /** Whether the client socket was already closed on purpose (reset or lingering close). */
  private boolean clientClosed;

  ProxyConnection(FaultProxy proxy, Socket client) {
    this.proxy = proxy;
    this.client = client;
  }

  @Override
  public void run() {
    try {
      InputStream in = new BufferedInputStream(client.getInputStream(), BUFFER);
      OutputStream out = new BufferedOutputStream(client.getOutputStream(), BUFFER);
      boolean open = true;
      while (open && !proxy.isClosed()) {
        Http1.Head request;
        try {
          request = Http1.readHead(in, proxy.maxHeaderBytes(), true);
        } catch (HttpFramingException e) {
          answer(out, e.isTooLarge() ? 502 : 400, e.getMessage());
          return;
        }
        if (request == null) {
          return;
        }
        open = exchange(request, in, out);
      }
    } catch (IOException e) {
      // the client connection failed, timed out or was closed by FaultProxy.close(): nothing to
      // answer; an exchange in progress has been logged
    } finally {
      closeUpstream();
      if (!clientClosed) {
        lingeringClose();
      }
      proxy.untrack(client);
    }
  }

  /** The result of one exchange, logged exactly once. */
  private final class Outcome {
    final int number;
    final Http1.Head request;
    final Fault fault;
    OptionalInt status = OptionalInt.empty();
    RecordedResponse response;
    boolean delivered;
    String error;
    boolean logged;

    Outcome(int number, Http1.Head request, Fault fault) {
      this.number = number;
      this.request = request;
      this.fault = fault;
    }

    void log() {
      if (logged) {
        return;
      }
      logged = true;
      proxy.record(
          new LoggedRequest(
              number,
              request.method(),
              request.target(),
              request.field("Idempotency-Key"),
              fault,
              status,
              delivered,
              Optional.ofNullable(error),
              Optional.ofNullable(response)));
    }
  }

  /**
   * Handles one request whose head has been read.
   *
   * @return whether the client connection stays open for another request
   * @throws IOException if the client connection fails
   */
  private boolean exchange(Http1.Head request, InputStream in, OutputStream out)
      throws IOException {
    int number = proxy.nextRequestNumber();
    Outcome outcome = new Outcome(number, request, proxy.faultFor(number));
    try {
      return exchange(outcome, in, out);
    } catch (IOException | RuntimeException e) {
      if (outcome.error == null) {
        outcome.error = (proxy.isClosed() ? "proxy closed: " : "client: ") + e;
      }
      throw e;
    } finally {
      outcome.log();
    }
  }

  private boolean exchange(Outcome outcome, InputStream in, OutputStream out) throws IOException {
    Http1.Head request = outcome.request;
    Fault.Kind kind = outcome.fault.kind();
    long maxBody = proxy.maxBodyBytes();
    int maxHeader = proxy.maxHeaderBytes();

    if (kind == Fault.Kind.DROP_REQUEST) {
      outcome.log();
      reset();
      return false;
    }
    if ("CONNECT".equals(request.method())) {
      return fail(outcome, out, 501, "CONNECT is not supported");
    }

    // 1. read the whole request
    Http1.Body framing;
    try {
      framing = Http1.requestBody(request, maxBody);
    } catch (HttpFramingException e) {
      return fail(outcome, out, e.isTooLarge() ? 502 : 400, e.getMessage());
    }
    boolean continued = false;
    if (framing.present() && expectsContinue(request)) {
      out.write(CONTINUE);
      out.flush();
      continued = true;
    }
    ByteArrayOutputStream body =
        new ByteArrayOutputStream(
            framing.framing() == Http1.Framing.FIXED ? (int) framing.length() : 256);
    try {
      Http1.readBody(in, framing, maxBody, maxHeader, body);
    } catch (HttpFramingException e) {
      return fail(outcome, out, e.isTooLarge() ? 502 : 400, e.getMessage());
    }

    // 2. the fault before forwarding
    if (kind == Fault.Kind.DELAY) {
      try {
        TimeUnit.NANOSECONDS.sleep(outcome.fault.delay().toNanos());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        outcome.error = "proxy closed during the delay";
        return false;
      }
    }

    // 3. forward it and read the whole response
    ByteArrayOutputStream response = new ByteArrayOutputStream(1024);
    ByteArrayOutputStream payload = proxy.recordResponses() ? new ByteArrayOutputStream(1024) : null;
    Http1.Head head;
    try {
      connectUpstream();
      upstreamOut.write(request.raw());
      body.writeTo(upstreamOut);
      upstreamOut.flush();
      head =
          readResponse(
              request, continued, kind == Fault.Kind.LOSE_RESPONSE ? null : out, response, payload);
    } catch (ClientWriteException e) {
      closeUpstream();
      throw e.getCause();
    } catch (SocketTimeoutException e) {
      closeUpstream();
      return fail(
          outcome, out, 504, "upstream: no answer within " + proxy.readTimeoutMillis() + " ms");
    } catch (HttpFramingException e) {
      closeUpstream();
      return fail(outcome, out, 502, "upstream: " + e.getMessage());
    } catch (IOException e) {
      closeUpstream();
      if (proxy.isClosed()) {
        throw e;
      }
      return fail(outcome, out, 502, "upstream: " + e);
    }
    outcome.status = OptionalInt.of(head.status());
    if (payload != null) {
      outcome.response = RecordedResponse.of(head, payload.toByteArray());
    }

    // 4. the fault after the server answered
    if (kind == Fault.Kind.LOSE_RESPONSE) {
      outcome.log();
      reset();
      closeUpstream();
      return false;
    }

    // 5. relay
    response.writeTo(out);
    out.flush();
    outcome.delivered = true;
    outcome.log();
    if (!upstreamReusable) {
      closeUpstream();
    }
    return upstreamReusable && request.keepAlive(request.requestVersion());
  }

  /**
   * Reads the final response into {@code sink}, relaying 1xx interim responses to {@code interim}
   * (if not {@code null}) as they arrive, and its payload alone into {@code payload} (if not
   * {@code null}). Sets {@link #upstreamReusable}.
   */
  private Http1.Head readResponse(
      Http1.Head request,
      boolean continued,
      OutputStream interim,
      ByteArrayOutputStream sink,
      ByteArrayOutputStream payload)
      throws IOException {
    boolean suppressContinue = continued;
    for (int i = 0; i <= MAX_INTERIM_RESPONSES; i++) {
      Http1.Head head = Http1.readHead(upstreamIn, proxy.maxHeaderBytes(), false);
      if (head == null) {
        throw new EOFException("the server closed the connection without a response");
      }
      int status = head.status();
      if (status == 101) {
        throw HttpFramingException.malformed("protocol upgrades (101) are not supported");
      }
      if (status >= 200) {
        Http1.Body framing = Http1.responseBody(head, request.method(), proxy.maxBodyBytes());
        sink.write(head.raw());
        Http1.readBody(
            upstreamIn, framing, proxy.maxBodyBytes(), proxy.maxHeaderBytes(), sink, payload);
        upstreamReusable =
            framing.framing() != Http1.Framing.UNTIL_CLOSE
                && head.keepAlive(head.responseVersion())
                && !(framing.framing() == Http1.Framing.CHUNKED
                    && !head.fields("Content-Length").isEmpty());
        return head;
      }
      if (status == 100 && suppressContinue) {
        suppressContinue = false; // the proxy already sent its own 100 Continue
        continue;
      }
      if (interim != null) {
        try {
          interim.write(head.raw());
          interim.flush();
        } catch (IOException e) {
          throw new ClientWriteException(e);
        }
      }
    }
    throw HttpFramingException.malformed("more than " + MAX_INTERIM_RESPONSES + " 1xx responses");
  }

  private static boolean expectsContinue(Http1.Head request) {
    return "HTTP/1.1".equals(request.requestVersion())
        && request.field("Expect").map("100-continue"::equalsIgnoreCase).orElse(false);
  }

  /** Opens an upstream connection unless the current one can carry another request. */
  private void connectUpstream() throws IOException {
    if (upstream != null && upstreamReusable && !upstreamStale()) {
      return;
    }
    closeUpstream();
    Socket s = new Socket();
    if (!proxy.track(s)) {
      throw FaultProxy.closedException();
    }
    upstream = s;
    s.connect(
        new InetSocketAddress(proxy.targetHost(), proxy.targetPort()), proxy.readTimeoutMillis());
    s.setSoTimeout(proxy.readTimeoutMillis());
    s.setTcpNoDelay(true);
    upstreamIn = new BufferedInputStream(s.getInputStream(), BUFFER);
    upstreamOut = new BufferedOutputStream(s.getOutputStream(), BUFFER);
    upstreamReusable = false;
  }

  /**
   * Checks, without sending anything, whether the server closed the idle upstream connection (or
   * sent unexpected bytes on it), so that a request is never written to a dead connection.
   */
  private boolean upstreamStale() {
    try {
      upstream.setSoTimeout(1);
      upstreamIn.read();
      return true; // end of stream, or a byte nobody asked for: not usable
    } catch (SocketTimeoutException e) {
      return false; // nothing to read: the connection is idle and open
    } catch (IOException e) {
      return true;
    } finally {
      try {
        upstream.setSoTimeout(proxy.readTimeoutMillis());
      } catch (IOException ignored) {
        // the next read fails and is reported
      }
    }
  }

  private void closeUpstream() {
    if (upstream != null) {
      proxy.untrack(upstream);
      FaultProxy.closeQuietly(upstream);
      upstream = null;
      upstreamIn = null;
      upstreamOut = null;
      upstreamReusable = false;
    }
  }

  /** Logs the failure, answers the client with an error response and closes the connection. */
  private boolean fail(Outcome outcome, OutputStream out, int status, String message) {
    outcome.error = message + "; answered " + status;
    outcome.log();
    answer(out, status, message);
    return false;
  }

  /** Sends a proxy-generated response and closes the client connection. */
  private void answer(OutputStream out, int status, String message) {
    byte[] body = ("idem fault proxy: " + message + "\n").getBytes(StandardCharsets.UTF_8);
    String head =
        "HTTP/1.1 "
            + status
            + " "
            + reason(status)
            + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
            + body.length
            + "\r\nConnection: close\r\n\r\n";
    try {
      out.write(head.getBytes(StandardCharsets.ISO_8859_1));
      out.write(body);
      out.flush();
    } catch (IOException ignored) {
      // the client is gone
    }
    closeUpstream();
    lingeringClose();
  }

  private static String reason(int status) {
    switch (status) {
      case 400:
        return "Bad Request";
      case 501:
        return "Not Implemented";
      case 502:
        return "Bad Gateway";
      case 504:
        return "Gateway Timeout";
      default:
        return "Error";
    }
  }

  /** Closes the client connection abruptly (TCP reset), as a lost response or dropped request. */
  private void reset() {
    clientClosed = true;
    try {
      client.setSoLinger(true, 0);
    } catch (IOException ignored) {
      // close anyway
    }
    FaultProxy.closeQuietly(client);
  }

  /**
   * Closes the client connection after what was written has been sent: half-closes it, then reads
   * and discards what the client still sends (for example the rest of a refused body) for up to
   * {@link #LINGER_MILLIS}, so that the close does not reset the connection before the client has
   * read the response.
   */
  private void lingeringClose() {
    if (clientClosed) {
      return;
    }
    clientClosed = true;
    try {
      client.shutdownOutput();
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LINGER_MILLIS);
      InputStream in = client.getInputStream();
      byte[] discard = new byte[BUFFER];
      while (!proxy.isClosed()) {
        long remaining = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (remaining <= 0) {
          break;
        }
        client.setSoTimeout((int) remaining);
        if (in.read(discard) < 0) {
          break;
        }
      }
    } catch (IOException ignored) {
      // timed out, reset or closed: close below
    } finally {
      FaultProxy.closeQuietly(client);
    }
  }

  /** A failure to write to the client while reading the upstream response. */
  private static final class ClientWriteException extends IOException {
    private static final long serialVersionUID = 1L;

    ClientWriteException(IOException cause) {
      super(cause);
    }

    @Override
    public synchronized IOException getCause() {
      return (IOException) super.getCause();
    }
  }
}
