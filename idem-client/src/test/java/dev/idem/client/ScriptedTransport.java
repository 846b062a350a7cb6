package dev.idem.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.function.Function;
import javax.net.ssl.SSLSession;

/** A transport that answers from a script and records every request it was given, with its time. */
final class ScriptedTransport implements IdempotentHttpClient.Transport {

  record Sent(Instant at, HttpRequest request, byte[] body) {}

  private final VirtualTime time;
  private final Function<Integer, Object> script;
  private final Duration attemptCost;
  final List<Sent> sent = new ArrayList<>();

  /**
   * @param script for attempt n (1-based, across all operations), an Integer status, a Reply, or an
   *     exception to fail with (an IOException, or one wrapped as the JDK client's futures do)
   */
  ScriptedTransport(VirtualTime time, Duration attemptCost, Function<Integer, Object> script) {
    this.time = time;
    this.attemptCost = attemptCost;
    this.script = script;
  }

  record Reply(int status, Map<String, List<String>> headers, String body) {}

  @Override
  public synchronized CompletableFuture<HttpResponse<byte[]>> send(HttpRequest request) {
    sent.add(new Sent(time.instant(), request, bodyOf(request)));
    time.advance(attemptCost);
    Object step = script.apply(sent.size());
    if (step instanceof Throwable) {
      return CompletableFuture.failedFuture((Throwable) step);
    }
    Reply reply = step instanceof Reply ? (Reply) step : new Reply((Integer) step, Map.of(), "");
    return CompletableFuture.completedFuture(new FakeResponse(request, reply));
  }

  static byte[] bodyOf(HttpRequest request) {
    if (request.bodyPublisher().isEmpty()) {
      return new byte[0];
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    CompletableFuture<Void> done = new CompletableFuture<>();
    request.bodyPublisher().get().subscribe(new Flow.Subscriber<ByteBuffer>() {
      @Override
      public void onSubscribe(Flow.Subscription s) {
        s.request(Long.MAX_VALUE);
      }

      @Override
      public void onNext(ByteBuffer b) {
        byte[] chunk = new byte[b.remaining()];
        b.get(chunk);
        out.writeBytes(chunk);
      }

      @Override
      public void onError(Throwable t) {
        done.completeExceptionally(t);
      }

      @Override
      public void onComplete() {
        done.complete(null);
      }
    });
    done.join();
    return out.toByteArray();
  }

  private static final class FakeResponse implements HttpResponse<byte[]> {
    private final HttpRequest request;
    private final Reply reply;

    FakeResponse(HttpRequest request, Reply reply) {
      this.request = request;
      this.reply = reply;
    }

    @Override
    public int statusCode() {
      return reply.status();
    }

    @Override
    public HttpRequest request() {
      return request;
    }

    @Override
    public Optional<HttpResponse<byte[]>> previousResponse() {
      return Optional.empty();
    }

    @Override
    public HttpHeaders headers() {
      return HttpHeaders.of(reply.headers(), (a, b) -> true);
    }

    @Override
    public byte[] body() {
      return reply.body().getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public Optional<SSLSession> sslSession() {
      return Optional.empty();
    }

    @Override
    public URI uri() {
      return request.uri();
    }

    @Override
    public HttpClient.Version version() {
      return HttpClient.Version.HTTP_1_1;
    }
  }
}
