package dev.idem.campaign;

import java.io.IOException;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.function.BiConsumer;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * A JDK {@link HttpClient} that passes every call to another one and tells an observer about each
 * attempt's outcome (a response, or the exception), so that the campaign sees every attempt that
 * {@code IdempotentHttpClient} makes, not only its final answer. Thread-safe if the observer is.
 */
final class RecordingHttpClient extends HttpClient {

  private final HttpClient delegate;
  private final BiConsumer<HttpResponse<?>, Throwable> observer;

  RecordingHttpClient(HttpClient delegate, BiConsumer<HttpResponse<?>, Throwable> observer) {
    this.delegate = delegate;
    this.observer = observer;
  }

  @Override
  public Optional<CookieHandler> cookieHandler() {
    return delegate.cookieHandler();
  }

  @Override
  public Optional<Duration> connectTimeout() {
    return delegate.connectTimeout();
  }

  @Override
  public Redirect followRedirects() {
    return delegate.followRedirects();
  }

  @Override
  public Optional<ProxySelector> proxy() {
    return delegate.proxy();
  }

  @Override
  public SSLContext sslContext() {
    return delegate.sslContext();
  }

  @Override
  public SSLParameters sslParameters() {
    return delegate.sslParameters();
  }

  @Override
  public Optional<Authenticator> authenticator() {
    return delegate.authenticator();
  }

  @Override
  public Version version() {
    return delegate.version();
  }

  @Override
  public Optional<Executor> executor() {
    return delegate.executor();
  }

  @Override
  public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler) throws IOException, InterruptedException {
    try {
      HttpResponse<T> r = delegate.send(request, handler);
      observer.accept(r, null);
      return r;
    } catch (IOException e) {
      observer.accept(null, e);
      throw e;
    }
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
    return sendAsync(request, handler, null);
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> push) {
    return delegate.sendAsync(request, handler, push).whenComplete((r, f) -> observer.accept(r, unwrap(f)));
  }

  private static Throwable unwrap(Throwable f) {
    return f instanceof CompletionException && f.getCause() != null ? f.getCause() : f;
  }
}
