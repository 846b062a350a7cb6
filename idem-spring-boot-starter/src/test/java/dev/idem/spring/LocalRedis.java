package dev.idem.spring;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Assumptions;

/**
 * The Redis server the starter's Spring Data Redis tests use, 127.0.0.1:6379, checked with a bare
 * {@code PING} (no client library, so the check works with whichever client the test runs on).
 * Missing, the test is skipped with a line on standard error, except under {@code CI=true}, where
 * it fails.
 */
public final class LocalRedis {

  public static final String HOST = "127.0.0.1";
  public static final int PORT = 6379;

  private LocalRedis() {}

  public static void require() {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(HOST, PORT), 2000);
      socket.setSoTimeout(2000);
      OutputStream out = socket.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = socket.getInputStream();
      byte[] reply = in.readNBytes(7);
      if (!new String(reply, StandardCharsets.US_ASCII).equals("+PONG\r\n")) {
        throw new IOException("PING was answered " + new String(reply, StandardCharsets.US_ASCII).trim());
      }
    } catch (IOException e) {
      String message = "Redis is not reachable at " + HOST + ":" + PORT + " (" + e.getMessage() + ")";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure", e);
      }
      System.err.println("[idem-spring-boot-starter] SKIPPED: " + message);
      Assumptions.abort(message);
    }
  }
}
