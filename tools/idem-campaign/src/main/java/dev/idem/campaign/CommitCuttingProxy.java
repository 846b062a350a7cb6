package dev.idem.campaign;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A loopback TCP proxy between the service and its PostgreSQL server that relays bytes unchanged
 * and, when {@linkplain #arm armed}, cuts one connection at a COMMIT:
 *
 * <ul>
 *   <li>{@link Cut#BEFORE_COMMIT}: the first client chunk that contains the ASCII bytes {@code
 *       COMMIT} (pgjdbc sends {@code connection.commit()} as the query text {@code COMMIT}) is not
 *       forwarded; both sides are closed. The server rolls the transaction back.
 *   <li>{@link Cut#AFTER_COMMIT}: that chunk is forwarded; when the server's next bytes (its answer
 *       to the COMMIT, so the transaction is durable) arrive, they are discarded and both sides are
 *       closed. The client never learns that its transaction committed: the lost acknowledgement.
 * </ul>
 *
 * One arming cuts one connection; {@link #fired(Cut)} counts the cuts that happened. Thread-safe.
 */
public final class CommitCuttingProxy implements AutoCloseable {

  /** Where a connection is cut. */
  public enum Cut {
    /** The COMMIT never reaches the server. */
    BEFORE_COMMIT,
    /** The server commits; its acknowledgement never reaches the client. */
    AFTER_COMMIT
  }

  private static final byte[] COMMIT = "COMMIT".getBytes(StandardCharsets.US_ASCII);

  private final ServerSocket server;
  private final int upstreamPort;
  private final AtomicReference<Cut> armed = new AtomicReference<>();
  private final AtomicInteger before = new AtomicInteger();
  private final AtomicInteger after = new AtomicInteger();
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  private CommitCuttingProxy(ServerSocket server, int upstreamPort) {
    this.server = server;
    this.upstreamPort = upstreamPort;
  }

  /**
   * @param upstreamPort the server's port on 127.0.0.1
   * @return a running proxy on a free loopback port
   * @throws IOException if it cannot listen
   */
  public static CommitCuttingProxy start(int upstreamPort) throws IOException {
    ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    CommitCuttingProxy proxy = new CommitCuttingProxy(server, upstreamPort);
    Thread t = new Thread(proxy::acceptLoop, "campaign-proxy-accept");
    t.setDaemon(true);
    t.start();
    return proxy;
  }

  /** @return the port the service connects to */
  public int port() {
    return server.getLocalPort();
  }

  /**
   * Arms one cut: the next COMMIT on any connection is cut this way.
   *
   * @param cut where
   */
  public void arm(Cut cut) {
    armed.set(cut);
  }

  /** @return whether the last arming has not fired yet */
  public boolean isArmed() {
    return armed.get() != null;
  }

  /** Disarms without cutting. */
  public void disarm() {
    armed.set(null);
  }

  /** @return how many connections were cut this way */
  public int fired(Cut cut) {
    return cut == Cut.BEFORE_COMMIT ? before.get() : after.get();
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket();
        try {
          upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), upstreamPort), 5000);
        } catch (IOException refused) {
          client.close(); // the database is down: so is the connection
          continue;
        }
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        open.add(client);
        open.add(upstream);
        Link link = new Link(client, upstream);
        Thread up = new Thread(link::clientToServer, "campaign-proxy-c2s");
        Thread down = new Thread(link::serverToClient, "campaign-proxy-s2c");
        up.setDaemon(true);
        down.setDaemon(true);
        up.start();
        down.start();
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private final class Link {
    final Socket client;
    final Socket upstream;
    volatile boolean dropReply;

    Link(Socket client, Socket upstream) {
      this.client = client;
      this.upstream = upstream;
    }

    void clientToServer() {
      byte[] buf = new byte[16384];
      try (InputStream in = client.getInputStream(); OutputStream out = upstream.getOutputStream()) {
        int n;
        while ((n = in.read(buf)) >= 0) {
          if (armed.get() != null && contains(buf, n, COMMIT)) {
            Cut cut = armed.getAndSet(null);
            if (cut == Cut.BEFORE_COMMIT) {
              before.incrementAndGet();
              shut();
              return;
            }
            if (cut == Cut.AFTER_COMMIT) {
              dropReply = true;
            }
          }
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // either side went away
      } finally {
        if (!dropReply) {
          shut();
        }
      }
    }

    void serverToClient() {
      byte[] buf = new byte[16384];
      try (InputStream in = upstream.getInputStream(); OutputStream out = client.getOutputStream()) {
        int n;
        while ((n = in.read(buf)) >= 0) {
          if (dropReply) {
            after.incrementAndGet();
            return; // the COMMIT's answer arrived: the transaction is committed; the client never sees it
          }
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // either side went away
      } finally {
        shut();
      }
    }

    void shut() {
      for (Socket s : new Socket[] {client, upstream}) {
        open.remove(s);
        try {
          s.close();
        } catch (IOException ignored) {
          // closing
        }
      }
    }
  }

  static boolean contains(byte[] buf, int n, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= n; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (buf[i + j] != needle[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  /** Stops listening and closes every relayed connection. */
  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException ignored) {
      // closing
    }
    for (Socket s : open) {
      try {
        s.close();
      } catch (IOException ignored) {
        // closing
      }
    }
  }
}
