package dev.idem.faultproxy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A deterministic loopback TCP proxy for HTTP/1.1 that injects a {@link Fault} per request
 * number: it listens on {@code 127.0.0.1}, forwards to one target server, and for request 1, 2, 3
 * ... either relays the exchange, loses the response after the server produced it, drops the
 * request before the server sees it, or delays it. It reproduces the failures idempotency keys
 * exist for, over a real socket, against a real server.
 *
 * <p><b>Numbering.</b> Requests, not connections, are numbered: from 1, in the order the proxy
 * finishes reading each request head, across all client connections (a keep-alive connection
 * carries several requests). Requests whose head cannot be read (malformed or over the head limit)
 * get no number. Every numbered request gets exactly one {@link LoggedRequest} in {@link #log()}
 * once the proxy is done with it.
 *
 * <p><b>Framing.</b> The proxy parses HTTP/1.1 itself in both directions (RFC 9112): request line,
 * header fields, and a Content-Length or chunked body; status line, header fields, 1xx interim
 * responses (relayed as they arrive), and a Content-Length, chunked or close-delimited body, with
 * no body after {@code HEAD}, 204 and 304. Messages are forwarded byte for byte as received; the
 * proxy adds no header. One thread serves each client connection, one request at a time: read the
 * whole request, apply the fault, write it to the client connection's own upstream connection
 * (opened on first use, reused while both sides keep the connection alive), read the whole
 * response, then relay or drop it. After {@link Fault#LOSE_RESPONSE} or {@link Fault#DROP_REQUEST}
 * the proxy resets the client connection (the client sees "connection reset" or end of stream) and
 * closes the upstream connection.
 *
 * <p><b>{@code Expect: 100-continue}.</b> The proxy must read the whole request before the fault
 * is applied, so it answers {@code 100 Continue} itself (unless the declared Content-Length is
 * over the limit) and suppresses the server's first {@code 100 Continue}; other 1xx responses are
 * relayed, except under {@link Fault#LOSE_RESPONSE}.
 *
 * <p><b>Bounds.</b> A message head may have at most {@link Builder#maxHeaderBytes(int)} bytes
 * (default 64 KiB) and a body at most {@link Builder#maxBodyBytes(long)} bytes of payload (default
 * 16 MiB); bodies are buffered up to that limit, never beyond. Over a limit, the proxy answers
 * {@code 502 Bad Gateway} with a short text and closes the connection; an oversized request never
 * reaches the server. A malformed request is answered {@code 400}, {@code CONNECT} {@code 501}, an
 * unreachable or misbehaving server {@code 502} and a server that does not answer within the read
 * timeout {@code 504}. Every socket has the read timeout of {@link Builder#readTimeout(Duration)}
 * (default 30 s), which also bounds connecting to the server and idle keep-alive connections.
 *
 * <p><b>Not supported.</b> {@code CONNECT}, protocol upgrades ({@code 101}), HTTP/2, TLS, and
 * HTTP/0.9. Writes are not bounded by the timeout: a client that stops reading blocks its own
 * connection's thread until {@link #close()}.
 *
 * <p><b>Thread-safety.</b> Thread-safe: every method may be called from any thread while the proxy
 * serves connections. The {@link Builder} is not thread-safe.
 *
 * <p><b>Example</b>, JDK only ({@code com.sun.net.httpserver} as the server, {@code java.net.http}
 * as the client), in a method that declares {@code throws Exception}; {@code FaultProxyTest}
 * runs the same code:
 *
 * <pre>{@code
 * HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
 * AtomicInteger effects = new AtomicInteger();
 * server.createContext("/orders", exchange -> {
 *   exchange.getRequestBody().readAllBytes();
 *   byte[] body = ("{\"id\":" + effects.incrementAndGet() + "}").getBytes(StandardCharsets.UTF_8);
 *   exchange.sendResponseHeaders(201, body.length);
 *   exchange.getResponseBody().write(body);
 *   exchange.close();
 * });
 * server.start();
 * try (FaultProxy proxy = FaultProxy.builder()
 *     .target("127.0.0.1", server.getAddress().getPort())
 *     .fault(1, Fault.LOSE_RESPONSE)
 *     .fault(2, Fault.delay(Duration.ofMillis(500)))
 *     .start()) {
 *   HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
 *   HttpRequest post = HttpRequest.newBuilder(proxy.uri().resolve("/orders"))
 *       .header("Idempotency-Key", "order-42")
 *       .POST(HttpRequest.BodyPublishers.ofString("{\"value\":42}"))
 *       .build();
 *   try {
 *     client.send(post, HttpResponse.BodyHandlers.ofString()); // request 1: the server commits,
 *   } catch (IOException lost) {                                // the response is lost
 *     HttpResponse<String> retry = client.send(post, HttpResponse.BodyHandlers.ofString());
 *     System.out.println(retry.statusCode() + " " + retry.body()); // request 2: 201 {"id":2}
 *   }
 *   proxy.await(2, Duration.ofSeconds(5));
 *   proxy.log().forEach(System.out::println);
 *   System.out.println("effects: " + effects.get()); // 2: the server has no idempotency keys
 * } finally {
 *   server.stop(0);
 * }
 * }</pre>
 */
public final class FaultProxy implements AutoCloseable {

  /** The default read timeout of every socket: 30 seconds. */
  public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(30);
  /** The default largest message body payload, in bytes: 16 MiB. */
  public static final long DEFAULT_MAX_BODY_BYTES = 16L * 1024 * 1024;
  /** The default largest message head, in bytes: 64 KiB. */
  public static final int DEFAULT_MAX_HEADER_BYTES = 64 * 1024;
  /** The largest value {@link Builder#maxBodyBytes(long)} accepts, in bytes: 512 MiB. */
  public static final long MAX_BODY_BYTES_LIMIT = 512L * 1024 * 1024;

  private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

  private final String targetHost;
  private final int targetPort;
  private final Map<Integer, Fault> faults;
  private final int readTimeoutMillis;
  private final long maxBodyBytes;
  private final int maxHeaderBytes;
  private final boolean recordResponses;

  private final ServerSocket server;
  private final int port;
  private final Thread acceptor;
  private final ExecutorService connections;
  private final AtomicInteger requests = new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final Object logLock = new Object();
  private final SortedMap<Integer, LoggedRequest> log = new TreeMap<>();

  private FaultProxy(Builder b) throws IOException {
    this.targetHost = b.targetHost;
    this.targetPort = b.targetPort;
    this.faults = Collections.unmodifiableMap(new TreeMap<>(b.faults));
    this.readTimeoutMillis = (int) b.readTimeout.toMillis();
    this.maxBodyBytes = b.maxBodyBytes;
    this.maxHeaderBytes = b.maxHeaderBytes;
    this.recordResponses = b.recordResponses;

    ServerSocket s = new ServerSocket();
    try {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, 1}), b.listenPort), 128);
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
    this.server = s;
    this.port = s.getLocalPort();
    AtomicInteger ids = new AtomicInteger();
    this.connections =
        new ThreadPoolExecutor(
            0,
            Integer.MAX_VALUE,
            10,
            TimeUnit.SECONDS,
            new SynchronousQueue<>(),
            r -> {
              Thread t = new Thread(r, "idem-fault-proxy-" + port + "-conn-" + ids.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    this.acceptor = new Thread(this::acceptLoop, "idem-fault-proxy-" + port + "-accept");
    this.acceptor.setDaemon(true);
    this.acceptor.start();
  }

  /**
   * Starts configuring a proxy.
   *
   * @return a new builder, never {@code null}
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * @return the port the proxy listens on, on {@code 127.0.0.1}; the ephemeral port chosen by the
   *     system if the builder asked for port 0. Still answers after {@link #close()}.
   */
  public int port() {
    return port;
  }

  /**
   * @return {@code http://127.0.0.1:<port>/}, the base URI of the proxy, to {@link
   *     URI#resolve(String) resolve} request paths against; never {@code null}
   */
  public URI uri() {
    return URI.create("http://127.0.0.1:" + port + "/");
  }

  /**
   * @return the fault rules the proxy was built with, by request number, in ascending order;
   *     request numbers without a rule get {@link Fault#NONE}; immutable, never {@code null}
   */
  public Map<Integer, Fault> faults() {
    return faults;
  }

  /**
   * @return how many request heads the proxy has read completely, that is the highest request
   *     number given so far (0 before the first request); requests may still be in flight
   */
  public int requestsSeen() {
    return requests.get();
  }

  /**
   * Returns what the proxy did with every request it is done with, by ascending request number. A
   * request appears once the proxy has relayed, lost or dropped its response, or failed; use
   * {@link #await(int, Duration)} to wait for it. In particular the record of a relayed response
   * may appear shortly after the client has received it.
   *
   * @return an immutable snapshot, never {@code null}
   */
  public List<LoggedRequest> log() {
    synchronized (logLock) {
      return List.copyOf(log.values());
    }
  }

  /**
   * Waits until at least {@code requests} requests appear in {@link #log()}, or the timeout
   * elapses.
   *
   * @param requests how many logged requests to wait for; 0 or more
   * @param timeout the longest time to wait; zero or positive
   * @return {@code true} if that many requests are logged, {@code false} if the timeout elapsed
   *     first
   * @throws NullPointerException if {@code timeout} is {@code null}
   * @throws IllegalArgumentException if {@code requests} or {@code timeout} is negative
   * @throws InterruptedException if the calling thread is interrupted while waiting
   */
  public boolean await(int requests, Duration timeout) throws InterruptedException {
    Objects.requireNonNull(timeout, "timeout");
    if (requests < 0) {
      throw new IllegalArgumentException("requests must not be negative, was " + requests);
    }
    if (timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must not be negative, was " + timeout);
    }
    long deadline = System.nanoTime() + saturatedNanos(timeout);
    synchronized (logLock) {
      while (log.size() < requests) {
        long remaining = deadline - System.nanoTime();
        if (remaining <= 0) {
          return false;
        }
        TimeUnit.NANOSECONDS.timedWait(logLock, remaining);
      }
      return true;
    }
  }

  /** @return whether {@link #close()} has been called */
  public boolean isClosed() {
    return closed.get();
  }

  /**
   * Stops listening, closes every client and upstream connection, interrupts delayed requests, and
   * waits up to 5 seconds for the connection threads to finish. Requests in flight are logged with
   * an error. Idempotent: later calls return at once. Never throws.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    closeQuietly(server);
    for (Socket s : sockets) {
      closeQuietly(s);
    }
    connections.shutdownNow();
    try {
      acceptor.join(CLOSE_WAIT.toMillis());
      connections.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** @return a description with the listening port, the target and the fault rules */
  @Override
  public String toString() {
    return "FaultProxy[127.0.0.1:"
        + port
        + " -> "
        + targetHost
        + ":"
        + targetPort
        + ", faults="
        + faults
        + (closed.get() ? ", closed" : "")
        + "]";
  }

  private void acceptLoop() {
    while (!closed.get()) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        if (closed.get()) {
          return;
        }
        continue; // a failed accept (for example an aborted handshake) does not stop the proxy
      }
      try {
        client.setSoTimeout(readTimeoutMillis);
        client.setTcpNoDelay(true);
        if (!track(client)) {
          continue;
        }
        connections.execute(new ProxyConnection(this, client));
      } catch (IOException | RejectedExecutionException e) {
        untrack(client);
        closeQuietly(client);
      }
    }
  }

  // ---- package-private services for ProxyConnection ----

  /** @return the next request number, from 1 */
  int nextRequestNumber() {
    return requests.incrementAndGet();
  }

  /** @return the fault for a request number, {@link Fault#NONE} if none was configured */
  Fault faultFor(int number) {
    return faults.getOrDefault(number, Fault.NONE);
  }

  /** Adds a record to the log and wakes up {@link #await(int, Duration)}. */
  void record(LoggedRequest entry) {
    synchronized (logLock) {
      log.put(entry.number(), entry);
      logLock.notifyAll();
    }
  }

  /**
   * Registers a socket so that {@link #close()} closes it.
   *
   * @return {@code false} (and closes the socket) if the proxy is already closed
   */
  boolean track(Socket socket) {
    sockets.add(socket);
    if (closed.get()) {
      sockets.remove(socket);
      closeQuietly(socket);
      return false;
    }
    return true;
  }

  /** Forgets a socket registered by {@link #track(Socket)}. */
  void untrack(Socket socket) {
    sockets.remove(socket);
  }

  String targetHost() {
    return targetHost;
  }

  int targetPort() {
    return targetPort;
  }

  int readTimeoutMillis() {
    return readTimeoutMillis;
  }

  long maxBodyBytes() {
    return maxBodyBytes;
  }

  int maxHeaderBytes() {
    return maxHeaderBytes;
  }

  boolean recordResponses() {
    return recordResponses;
  }

  static void closeQuietly(AutoCloseable c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (Exception ignored) {
      // closing is best effort
    }
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE / 2;
    }
  }

  /**
   * Configures and starts a {@link FaultProxy}. Every setter validates its argument at once and
   * throws on an invalid one; {@link #start()} needs only a {@link #target(String, int) target}.
   * Not thread-safe; a builder can start several proxies with the same settings.
   */
  public static final class Builder {
    private String targetHost;
    private int targetPort;
    private int listenPort;
    private final Map<Integer, Fault> faults = new TreeMap<>();
    private Duration readTimeout = DEFAULT_READ_TIMEOUT;
    private long maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private int maxHeaderBytes = DEFAULT_MAX_HEADER_BYTES;
    private boolean recordResponses;

    private Builder() {}

    /**
     * Sets the server the proxy forwards to. The host is resolved on every upstream connect.
     *
     * @param host a host name or IP literal, for example {@code 127.0.0.1}
     * @param port the server's TCP port, 1 to 65535
     * @return this builder
     * @throws NullPointerException if {@code host} is {@code null}
     * @throws IllegalArgumentException if {@code host} is blank or {@code port} is out of range
     */
    public Builder target(String host, int port) {
      Objects.requireNonNull(host, "host");
      if (host.isBlank()) {
        throw new IllegalArgumentException("host must not be blank");
      }
      if (port < 1 || port > 65535) {
        throw new IllegalArgumentException("target port must be between 1 and 65535, was " + port);
      }
      this.targetHost = host.strip();
      this.targetPort = port;
      return this;
    }

    /**
     * Sets the port to listen on, on {@code 127.0.0.1}; the default 0 lets the system choose a
     * free ephemeral port (see {@link FaultProxy#port()}).
     *
     * @param port 0 to 65535
     * @return this builder
     * @throws IllegalArgumentException if {@code port} is out of range
     */
    public Builder listenPort(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("listen port must be between 0 and 65535, was " + port);
      }
      this.listenPort = port;
      return this;
    }

    /**
     * Sets the fault for one request number; numbers without a rule get {@link Fault#NONE}.
     *
     * @param requestNumber the request number, from 1 (see {@link FaultProxy} for the numbering)
     * @param fault the fault to apply to that request
     * @return this builder
     * @throws NullPointerException if {@code fault} is {@code null}
     * @throws IllegalArgumentException if {@code requestNumber} is less than 1 or already has a
     *     rule
     */
    public Builder fault(int requestNumber, Fault fault) {
      Objects.requireNonNull(fault, "fault");
      if (requestNumber < 1) {
        throw new IllegalArgumentException("request numbers start at 1, was " + requestNumber);
      }
      if (faults.containsKey(requestNumber)) {
        throw new IllegalArgumentException(
            "request " + requestNumber + " already has a fault: " + faults.get(requestNumber));
      }
      faults.put(requestNumber, fault);
      return this;
    }

    /**
     * Sets the read timeout of every client and upstream socket, which is also the connect timeout
     * and how long an idle keep-alive client connection is kept. Default {@link
     * #DEFAULT_READ_TIMEOUT}.
     *
     * @param timeout from 1 millisecond to {@link Integer#MAX_VALUE} milliseconds; rounded down to
     *     whole milliseconds
     * @return this builder
     * @throws NullPointerException if {@code timeout} is {@code null}
     * @throws IllegalArgumentException if {@code timeout} is out of range
     */
    public Builder readTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.compareTo(Duration.ofMillis(1)) < 0
          || timeout.compareTo(Duration.ofMillis(Integer.MAX_VALUE)) > 0) {
        throw new IllegalArgumentException(
            "read timeout must be between 1 ms and " + Integer.MAX_VALUE + " ms, was " + timeout);
      }
      this.readTimeout = timeout;
      return this;
    }

    /**
     * Sets the largest body payload (without chunk framing) the proxy buffers, for requests and
     * responses alike. Default {@link #DEFAULT_MAX_BODY_BYTES}.
     *
     * @param bytes from 0 to {@link #MAX_BODY_BYTES_LIMIT}
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is out of range
     */
    public Builder maxBodyBytes(long bytes) {
      if (bytes < 0 || bytes > MAX_BODY_BYTES_LIMIT) {
        throw new IllegalArgumentException(
            "max body bytes must be between 0 and " + MAX_BODY_BYTES_LIMIT + ", was " + bytes);
      }
      this.maxBodyBytes = bytes;
      return this;
    }

    /**
     * Sets the largest message head (start line and header fields), for requests and responses
     * alike; it also bounds the trailer section and the chunk framing beyond the payload. Default
     * {@link #DEFAULT_MAX_HEADER_BYTES}.
     *
     * @param bytes from 256 to 16 MiB
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is out of range
     */
    public Builder maxHeaderBytes(int bytes) {
      if (bytes < 256 || bytes > 16 * 1024 * 1024) {
        throw new IllegalArgumentException(
            "max header bytes must be between 256 and 16777216, was " + bytes);
      }
      this.maxHeaderBytes = bytes;
      return this;
    }

    /**
     * Sets whether the proxy keeps each server's final response (status, header fields and
     * payload) in the request's {@link LoggedRequest#response()}, including a response it then
     * lost under {@link Fault#LOSE_RESPONSE}: that is how a test learns what the client never
     * saw. Off by default; each record holds up to {@link #maxBodyBytes(long)} bytes for as long
     * as the proxy lives.
     *
     * @param record whether to record responses
     * @return this builder
     */
    public Builder recordResponses(boolean record) {
      this.recordResponses = record;
      return this;
    }

    /**
     * Binds the listening socket and starts accepting connections.
     *
     * @return the running proxy, never {@code null}; close it when done
     * @throws IllegalStateException if no {@link #target(String, int) target} was set
     * @throws IOException if the port cannot be bound, for example because it is in use
     */
    public FaultProxy start() throws IOException {
      if (targetHost == null) {
        throw new IllegalStateException("no target: call target(host, port) before start()");
      }
      return new FaultProxy(this);
    }
  }

  /** Thrown inside the proxy when it is closed while a connection is being set up. */
  static SocketException closedException() {
    return new SocketException("fault proxy closed");
  }
}
