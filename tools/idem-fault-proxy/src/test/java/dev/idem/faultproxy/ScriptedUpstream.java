package dev.idem.faultproxy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A raw TCP "server" for tests that need exact bytes: for every request it reads (head, plus a
 * Content-Length body), it writes the next canned response verbatim, and optionally closes the
 * connection. Records request heads and bodies, counts connections and connections the peer
 * closed. Thread-safe.
 */
final class ScriptedUpstream implements AutoCloseable {

  /** A canned response: exact bytes, and whether to close the connection after writing them. */
  record Canned(String bytes, boolean closeAfter) {}

  private final ServerSocket server;
  private final BlockingQueue<Canned> script = new LinkedBlockingQueue<>();
  final List<String> requestHeads = new CopyOnWriteArrayList<>();
  final List<String> requestBodies = new CopyOnWriteArrayList<>();
  final AtomicInteger connections = new AtomicInteger();
  final AtomicInteger closedByPeer = new AtomicInteger();
  final AtomicInteger responsesWritten = new AtomicInteger();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  ScriptedUpstream() throws IOException {
    server = new ServerSocket(0, 50, InetAddress.getByAddress(new byte[] {127, 0, 0, 1}));
    Thread t = new Thread(this::acceptLoop, "scripted-upstream-accept");
    t.setDaemon(true);
    t.start();
  }

  int port() {
    return server.getLocalPort();
  }

  /** Queues a response that keeps the connection open. */
  ScriptedUpstream then(String bytes) {
    script.add(new Canned(bytes, false));
    return this;
  }

  /** Queues a response after which the connection is closed. */
  ScriptedUpstream thenClose(String bytes) {
    script.add(new Canned(bytes, true));
    return this;
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      try {
        Socket s = server.accept();
        sockets.add(s);
        connections.incrementAndGet();
        Thread t = new Thread(() -> serve(s), "scripted-upstream-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  private void serve(Socket s) {
    try (s) {
      s.setSoTimeout(20_000);
      InputStream in = s.getInputStream();
      OutputStream out = s.getOutputStream();
      while (true) {
        String head = readHead(in);
        if (head == null) {
          closedByPeer.incrementAndGet();
          return;
        }
        requestHeads.add(head);
        int length = contentLength(head);
        requestBodies.add(new String(in.readNBytes(length), StandardCharsets.ISO_8859_1));
        Canned c = script.poll(10, TimeUnit.SECONDS);
        if (c == null) {
          return;
        }
        out.write(c.bytes().getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        responsesWritten.incrementAndGet();
        if (c.closeAfter()) {
          return;
        }
      }
    } catch (IOException | InterruptedException e) {
      // test over
    }
  }

  private static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    while (true) {
      int b = in.read();
      if (b < 0) {
        return null;
      }
      head.write(b);
      matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
      if (matched == 4) {
        return head.toString(StandardCharsets.ISO_8859_1);
      }
    }
  }

  private static int contentLength(String head) {
    for (String line : head.split("\r\n")) {
      if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
        return Integer.parseInt(line.substring("content-length:".length()).trim());
      }
    }
    return 0;
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Socket s : sockets) {
      s.close();
    }
  }
}
