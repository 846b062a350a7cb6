package dev.idem.servlet;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.Principal;
import java.time.Duration;
import java.util.EnumSet;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/** An embedded Jetty 12 (EE10, Servlet 6.0) on 127.0.0.1 with the idempotency filter, and a real HTTP client. */
final class TestServer implements AutoCloseable {

  /** The header the test principal filter reads; a stand-in for real authentication. */
  static final String USER_HEADER = "X-Test-User";

  private final Server server;
  private final int port;
  final HttpClient client = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5))
      .build();

  TestServer(IdempotencyFilterConfig config, HttpServlet servlet) throws Exception {
    this(config, servlet, null);
  }

  /**
   * @param multipart the servlet's multipart configuration (as {@code @MultipartConfig} gives), or
   *     {@code null} for none
   * @param before filters that run before the idempotency filter, such as one that reads
   *     parameters as a CSRF check does
   */
  TestServer(IdempotencyFilterConfig config, HttpServlet servlet, MultipartConfigElement multipart, Filter... before) throws Exception {
    this("/", config, servlet, multipart, before);
  }

  /** As the constructor above, with the application under {@code contextPath} (such as {@code "/shop"}). */
  TestServer(String contextPath, IdempotencyFilterConfig config, HttpServlet servlet, MultipartConfigElement multipart, Filter... before)
      throws Exception {
    server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler(contextPath);
    context.addFilter(new FilterHolder(new PrincipalFromHeader()), "/*", EnumSet.of(DispatcherType.REQUEST));
    for (Filter f : before) {
      context.addFilter(new FilterHolder(f), "/*", EnumSet.of(DispatcherType.REQUEST));
    }
    context.addFilter(new FilterHolder(new IdempotencyFilter(config)), "/*", EnumSet.of(DispatcherType.REQUEST));
    ServletHolder holder = new ServletHolder(servlet);
    if (multipart != null) {
      holder.getRegistration().setMultipartConfig(multipart);
    }
    context.addServlet(holder, "/*");
    server.setHandler(context);
    server.start();
    port = connector.getLocalPort();
  }

  /** The port Jetty listens on, at 127.0.0.1. */
  int port() {
    return port;
  }

  URI uri(String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(20));
  }

  HttpResponse<byte[]> send(HttpRequest request) throws IOException, InterruptedException {
    return client.send(request, HttpResponse.BodyHandlers.ofByteArray());
  }

  /** A response read off a raw socket: status code, header block and body. */
  record RawResponse(int status, String head, byte[] body) {
    String header(String name) {
      for (String line : head.split("\r\n")) {
        int colon = line.indexOf(':');
        if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase(name)) {
          return line.substring(colon + 1).trim();
        }
      }
      return null;
    }
  }

  /**
   * Sends bytes java.net.http refuses to send (a non-ASCII header value) over a plain socket:
   * {@code POST path} with {@code Connection: close}, the given extra header line bytes, and body.
   */
  RawResponse rawPost(String path, byte[] headerLine, byte[] body) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", port)) {
      socket.setSoTimeout(20_000);
      OutputStream out = socket.getOutputStream();
      out.write(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
          + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(headerLine);
      out.write("\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
      byte[] all = socket.getInputStream().readAllBytes();
      String text = new String(all, StandardCharsets.ISO_8859_1);
      int end = text.indexOf("\r\n\r\n");
      String head = text.substring(0, end);
      int status = Integer.parseInt(head.substring(9, 12));
      byte[] rest = Arrays.copyOfRange(all, end + 4, all.length);
      return new RawResponse(status, head, rest);
    }
  }

  @Override
  public void close() {
    try {
      server.stop();
    } catch (Exception e) {
      throw new IllegalStateException("cannot stop Jetty", e);
    }
  }

  /** Sets the user principal from {@value #USER_HEADER}, as an authentication filter would. */
  static final class PrincipalFromHeader implements Filter {
    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
        throws IOException, ServletException {
      HttpServletRequest http = (HttpServletRequest) request;
      String user = http.getHeader(USER_HEADER);
      if (user == null) {
        chain.doFilter(request, response);
        return;
      }
      Principal principal = () -> user;
      chain.doFilter(new HttpServletRequestWrapper(http) {
        @Override
        public Principal getUserPrincipal() {
          return principal;
        }

        @Override
        public String getRemoteUser() {
          return user;
        }
      }, response);
    }
  }
}
