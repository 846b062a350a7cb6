package dev.idem.client.spring;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A real local HTTP server (the JDK's) that answers from a script, one answer per request, the last
 * answer repeating, and records what each request carried.
 */
final class ScriptedServer implements AutoCloseable {

  /** One answer: status, header fields, body. */
  record Answer(int status, Map<String, String> headers, String body) {
    static Answer of(int status) {
      return new Answer(status, Map.of(), "");
    }

    static Answer of(int status, String headerName, String headerValue) {
      return new Answer(status, Map.of(headerName, headerValue), "");
    }
  }

  /** What one request carried: method, path, Idempotency-Key (null when absent), body. */
  record Received(String method, String path, String key, String body) {}

  private final HttpServer server;
  private final List<Answer> script = new CopyOnWriteArrayList<>();
  private final List<Received> received = new CopyOnWriteArrayList<>();
  private volatile long firstAnswerDelayMillis;

  ScriptedServer(Answer... answers) {
    script.addAll(List.of(answers));
    try {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.setExecutor(Executors.newFixedThreadPool(4));
    server.createContext("/", exchange -> {
      byte[] body = exchange.getRequestBody().readAllBytes();
      int index;
      synchronized (received) {
        index = received.size();
        received.add(new Received(exchange.getRequestMethod(), exchange.getRequestURI().getPath(),
            exchange.getRequestHeaders().getFirst("Idempotency-Key"), new String(body, StandardCharsets.UTF_8)));
      }
      Answer answer = script.get(Math.min(index, script.size() - 1));
      if (index == 0 && firstAnswerDelayMillis > 0) {
        try {
          Thread.sleep(firstAnswerDelayMillis); // a server too slow for the client's attempt timeout
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      answer.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
      byte[] out = answer.body().getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(answer.status(), out.length == 0 ? -1 : out.length);
      if (out.length > 0) {
        exchange.getResponseBody().write(out);
      }
      exchange.close();
    });
    server.start();
  }

  /** Makes the first answer wait {@code millis} (real time) before it is sent. @return this server */
  ScriptedServer firstAnswerAfter(long millis) {
    firstAnswerDelayMillis = millis;
    return this;
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  List<Received> received() {
    return new ArrayList<>(received);
  }

  /** @return the keys of every request received, in order */
  List<String> keys() {
    return received().stream().map(Received::key).toList();
  }

  /** Waits (up to 10 s) until {@code condition} holds. */
  static void await(BooleanSupplier condition) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("condition not met within 10 s");
      }
      Thread.sleep(5);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
  }
}
