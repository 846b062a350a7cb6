package dev.idem.campaign;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * Malformed and odd requests against the notes service's key route ({@code POST /notes}) and its
 * neighbours, written byte for byte on a raw socket (so that duplicate header fields, invalid UTF-8,
 * broken framing and odd request targets reach the server as sent): malformed and oversized {@code
 * Idempotency-Key} fields, duplicate fields, bad or missing content types, invalid UTF-8, huge and
 * deeply nested JSON, odd numbers, multipart and form bodies, wrong methods, unusual targets, broken
 * framing, odd credentials and headers. Every kind is sent in turn (round robin), each with random
 * details. A correct service answers each with a status below 500 (no fault is injected while the
 * fuzzer runs), except where HTTP prescribes a 5xx (501 for a transfer coding the server does not
 * implement, or for CONNECT); {@link Result#fiveXx()} counts the others by kind and status. Not thread-safe.
 */
final class Fuzzer {

  /**
   * What a fuzz phase saw.
   *
   * @param requests requests sent
   * @param statuses answers by status (0: no answer, the connection closed without a status line)
   * @param fiveXx 5xx answers by fuzz kind, status and problem title
   */
  record Result(int requests, Map<Integer, Integer> statuses, Map<String, Integer> fiveXx) {
    int fiveXxTotal() {
      return fiveXx.values().stream().mapToInt(Integer::intValue).sum();
    }
  }

  /**
   * One request. {@code answer5xx} is the one 5xx status HTTP prescribes for it (0: none), such as
   * 501 for a transfer coding the server does not implement (RFC 9112, section 6.1); that answer is
   * not counted as a 5xx.
   */
  private record Case(String kind, byte[] bytes, int answer5xx) {
    Case(String kind, byte[] bytes) {
      this(kind, bytes, 0);
    }
  }

  private final String host;
  private final int port;
  private final Random random;
  private final List<String> credentials;
  private final PrintStream log;
  private final String name;
  private final List<Supplier<Case>> kinds = new ArrayList<>();

  /**
   * @param port the service's loopback port
   * @param random the source of every detail
   * @param credentials valid {@code Authorization} values (one per user)
   * @param log where the first request and answer of each 5xx kind go
   * @param name the run's name in log lines
   */
  Fuzzer(int port, Random random, List<String> credentials, PrintStream log, String name) {
    this.host = "127.0.0.1:" + port;
    this.port = port;
    this.random = random;
    this.credentials = List.copyOf(credentials);
    this.log = log;
    this.name = name;
    kinds.add(this::malformedKey);
    kinds.add(this::oversizedKey);
    kinds.add(this::duplicateHeaders);
    kinds.add(this::contentType);
    kinds.add(this::invalidUtf8);
    kinds.add(this::hugeJson);
    kinds.add(this::nestedJson);
    kinds.add(this::oddNumbers);
    kinds.add(this::jsonShapes);
    kinds.add(this::formBodies);
    kinds.add(this::wrongMethod);
    kinds.add(this::unusualTarget);
    kinds.add(this::framing);
    kinds.add(this::oddHeaders);
  }

  /**
   * Sends {@code count} requests, one at a time.
   *
   * @return what they were answered
   * @throws InterruptedException if interrupted
   */
  Result run(int count) throws InterruptedException {
    Map<Integer, Integer> statuses = new TreeMap<>();
    Map<String, Integer> fiveXx = new TreeMap<>();
    for (int i = 0; i < count; i++) {
      if (Thread.interrupted()) {
        throw new InterruptedException();
      }
      Case c = kinds.get(i % kinds.size()).get();
      byte[] answer = send(c.bytes());
      int status = status(answer);
      statuses.merge(status, 1, Integer::sum);
      if (status >= 500 && status != c.answer5xx()) {
        String what = c.kind() + " -> " + status + " " + problemTitle(answer);
        if (fiveXx.merge(what, 1, Integer::sum) == 1) {
          log.println("[campaign] " + name + ": fuzz " + what + "; request (first 600 bytes): "
              + printable(c.bytes(), 600) + "\n  answer: " + printable(answer, 1200));
        }
      }
    }
    return new Result(count, statuses, fiveXx);
  }

  // ---- the kinds -------------------------------------------------------------------------------

  private Case malformedKey() {
    String[] keys = {"", "\"\"", "unquoted", "\"unterminated", "unopened\"", "\"a\", \"b\"", "\"a\";x=1", ":YWJj:", "?1", "123",
        "\"\\\"\"", "\"\\x\"", "\" \"", "\"\t\"", "\"é\"", "\"\u00ff\u00fe\"", "*", "(\"a\")", "\"a\" \"b\"", "\"" + "\\".repeat(50) + "\""};
    String key = switch (random.nextInt(4)) {
      case 0 -> keys[random.nextInt(keys.length)];
      case 1 -> "\"" + randomLatin1(1 + random.nextInt(80)) + "\"";
      case 2 -> randomLatin1(1 + random.nextInt(80));
      default -> "\"" + "k".repeat(250 + random.nextInt(7000)) + "\"";
    };
    return new Case("malformed key", post(List.of("Content-Type: application/json", "Idempotency-Key: " + key), note()));
  }

  private Case oversizedKey() {
    int length = 8_000 + random.nextInt(120_000);
    return new Case("oversized key", post(List.of("Content-Type: application/json", "Idempotency-Key: \"" + "x".repeat(length) + "\""), note()));
  }

  private Case duplicateHeaders() {
    List<String> h = new ArrayList<>();
    switch (random.nextInt(4)) {
      case 0 -> {
        String k = key();
        h.add("Idempotency-Key: " + k);
        h.add("Idempotency-Key: " + k);
        h.add("Content-Type: application/json");
      }
      case 1 -> {
        h.add("Idempotency-Key: " + key());
        h.add("Idempotency-Key: " + key());
        h.add("Content-Type: application/json");
      }
      case 2 -> {
        h.add("Idempotency-Key: " + key());
        h.add("Content-Type: application/json");
        h.add("Content-Type: text/plain");
      }
      default -> {
        h.add("idempotency-key: " + key());
        h.add("IDEMPOTENCY-KEY: " + key());
        h.add("Content-Type: application/json");
        h.add("Authorization: " + credentials.get(0));
        h.add("Authorization: " + credentials.get(credentials.size() - 1));
      }
    }
    return new Case("duplicate header fields", post(h, note()));
  }

  private Case contentType() {
    String[] types = {null, "", "text/plain", "application/json; charset=latin1", "application/json; charset=bogus-42",
        "application/json;;;", "application/*", "*/*", "application/json; boundary=", "APPLICATION/JSON", "application/json ; charset=UTF-16",
        "application/problem+json", "application/x-json", "json", "application/json\t", "application/json; charset=\"utf-8",
        "application/octet-stream", "text/html; charset=utf-8", "application/xml", "multipart/mixed"};
    String t = types[random.nextInt(types.length)];
    List<String> h = new ArrayList<>(List.of("Idempotency-Key: " + key()));
    if (t != null) {
      h.add("Content-Type: " + t);
    }
    return new Case("content type", post(h, note()));
  }

  private Case invalidUtf8() {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.writeBytes("{\"title\":\"bad ".getBytes(StandardCharsets.US_ASCII));
    byte[][] bad = {{(byte) 0xff}, {(byte) 0xc3}, {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, {(byte) 0xc0, (byte) 0xaf},
        {(byte) 0xf8, (byte) 0x88, (byte) 0x80, (byte) 0x80, (byte) 0x80}, {(byte) 0x80}, {(byte) 0xe2, (byte) 0x82}};
    for (int i = 0, n = 1 + random.nextInt(4); i < n; i++) {
      body.writeBytes(bad[random.nextInt(bad.length)]);
      body.writeBytes("x".getBytes(StandardCharsets.US_ASCII));
    }
    body.writeBytes("\"}".getBytes(StandardCharsets.US_ASCII));
    String ct = random.nextBoolean() ? "application/json" : "application/json; charset=UTF-8";
    return new Case("invalid UTF-8", post(List.of("Content-Type: " + ct, "Idempotency-Key: " + key()), body.toByteArray()));
  }

  private Case hugeJson() {
    int size = 10_000 + random.nextInt(1_000_000);
    byte[] body = switch (random.nextInt(3)) {
      case 0 -> ("{\"title\":\"" + "t".repeat(size) + "\"}").getBytes(StandardCharsets.US_ASCII);
      case 1 -> ("{\"title\":\"huge padding\"" + ",\"p\":1".repeat(size / 6) + "}").getBytes(StandardCharsets.US_ASCII);
      default -> ("{\"title\":\"huge whitespace\"" + " ".repeat(size) + "}").getBytes(StandardCharsets.US_ASCII);
    };
    return new Case("huge JSON", post(List.of("Content-Type: application/json", "Idempotency-Key: " + key()), body));
  }

  private Case nestedJson() {
    int depth = 100 + random.nextInt(random.nextBoolean() ? 2_000 : 200_000);
    StringBuilder b = new StringBuilder();
    boolean objects = random.nextBoolean();
    if (objects) {
      b.append("{\"title\":\"nested\",\"n\":").append("{\"a\":".repeat(depth)).append("1").append("}".repeat(depth)).append("}");
    } else {
      b.append("[".repeat(depth)).append(random.nextBoolean() ? "]".repeat(depth) : "");
    }
    return new Case("deeply nested JSON", post(List.of("Content-Type: application/json", "Idempotency-Key: " + key()),
        b.toString().getBytes(StandardCharsets.US_ASCII)));
  }

  private Case oddNumbers() {
    String[] numbers = {"1e999999", "-1e999999", "1e-999999", "-0", "0.0000000000000000000000000000001", "123456789012345678901234567890123456789",
        "9".repeat(5000), "1." + "0".repeat(5000) + "1", "NaN", "Infinity", "-Infinity", "0x10", "01", "1e", "+1", ".5", "1_000", "1E+2147483648"};
    String n = numbers[random.nextInt(numbers.length)];
    String body = random.nextBoolean() ? "{\"title\":" + n + "}" : "{\"title\":\"odd number " + random.nextInt(1000) + "\",\"n\":" + n + "}";
    return new Case("odd numbers", post(List.of("Content-Type: application/json", "Idempotency-Key: " + key()), body.getBytes(StandardCharsets.US_ASCII)));
  }

  private Case jsonShapes() {
    String[] bodies = {"", "null", "[]", "\"title\"", "123", "true", "{}", "{\"title\":null}", "{\"title\":\"\"}", "{\"title\":\"   \"}",
        "{\"title\":\"\\u0000\"}", "{\"title\":\"\\ud800\"}", "{\"title\":\"\\udc00\\ud800\"}", "{\"title\":\"a\",\"title\":\"b\"}",
        "{\"title\":\"trailing\"} garbage", "{\"title\":\"x\"", "{\"title\":'single'}", "{title:\"unquoted\"}", "\ufeff{\"title\":\"bom\"}",
        "{\"title\":[\"a\"]}", "{\"title\":{\"a\":1}}", "{\"title\":\"" + "\\u00e9".repeat(300) + "\"}", "{\"title\":\"\\x41\"}",
        "{\"title\":\"ok\"}\n{\"title\":\"second\"}", "/* c */ {\"title\":\"comment\"}", "{\"title\":\"" + "🙂".repeat(150) + "\"}"};
    String body = bodies[random.nextInt(bodies.length)];
    return new Case("JSON shapes", post(List.of("Content-Type: application/json", "Idempotency-Key: " + key()), body.getBytes(StandardCharsets.UTF_8)));
  }

  private Case formBodies() {
    String boundary = "----b" + Long.toHexString(random.nextLong());
    return switch (random.nextInt(5)) {
      case 0 -> new Case("multipart/form-data", post(List.of("Content-Type: multipart/form-data; boundary=" + boundary, "Idempotency-Key: " + key()),
          ("--" + boundary + "\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nfrom a form\r\n"
              + "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
              + randomLatin1(random.nextInt(2000)) + "\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.ISO_8859_1)));
      case 1 -> new Case("multipart/form-data", post(List.of("Content-Type: multipart/form-data; boundary=" + boundary, "Idempotency-Key: " + key()),
          ("--" + boundary + "\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nunterminated").getBytes(StandardCharsets.ISO_8859_1)));
      case 2 -> new Case("multipart/form-data", post(List.of("Content-Type: multipart/form-data", "Idempotency-Key: " + key()),
          "no boundary".getBytes(StandardCharsets.US_ASCII)));
      case 3 -> new Case("form-urlencoded", post(List.of("Content-Type: application/x-www-form-urlencoded", "Idempotency-Key: " + key()),
          ("title=form+note&x=%zz&y=%ff%fe&" + "a=b&".repeat(random.nextInt(3000))).getBytes(StandardCharsets.US_ASCII)));
      default -> new Case("form-urlencoded", post(List.of("Content-Type: application/x-www-form-urlencoded; charset=bogus", "Idempotency-Key: " + key()),
          "title=%C3%28".getBytes(StandardCharsets.US_ASCII)));
    };
  }

  private Case wrongMethod() {
    String[] methods = {"PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "FOO", "GET", "HEAD", "PROPFIND", "post", "CONNECT"};
    String m = methods[random.nextInt(methods.length)];
    // GET and HEAD of /notes would read every note: those two go to one note
    String target = m.equals("GET") || m.equals("HEAD") || random.nextBoolean() ? "/notes/" + random.nextInt(100) : "/notes";
    if (m.equals("CONNECT")) {
      target = host;
    }
    // CONNECT asks an origin server to be a tunnel, which it does not implement: RFC 9110 (15.6.2) says 501
    return new Case("wrong method", request(m, target, List.of("Content-Type: application/json", "Idempotency-Key: " + key()), note(), true),
        m.equals("CONNECT") ? 501 : 0);
  }

  private Case unusualTarget() {
    String[] targets = {"/notes/", "/notes;jsessionid=abc", "//notes", "/notes?title=x", "/notes?%zz", "/NOTES", "/notes/%2e%2e/notes", "/./notes",
        "/notes/..;/notes", "http://" + "127.0.0.1:" + port + "/notes", "http://evil.example/notes", "*", "/notes#frag", "/%6eotes", "/notes%00",
        "/notes/99999999999999999999", "/notes/-1", "/notes/abc", "/notes/1/2", "/" + "a".repeat(9000), "/notes?" + "q=1&".repeat(2000),
        "/notes\\", "/no tes", "/notes/%c3%28", "/notes/\u00e9"};
    String t = targets[random.nextInt(targets.length)];
    return new Case("unusual target", request("POST", t, List.of("Content-Type: application/json", "Idempotency-Key: " + key()), note(), true));
  }

  private Case framing() {
    byte[] note = note();
    List<String> h = new ArrayList<>(List.of("Content-Type: application/json", "Idempotency-Key: " + key()));
    return switch (random.nextInt(6)) {
      case 0 -> {
        h.add("Transfer-Encoding: chunked");
        yield new Case("framing", request("POST", "/notes", h, ("zz\r\n" + new String(note, StandardCharsets.ISO_8859_1) + "\r\n0\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1), false));
      }
      case 1 -> {
        h.add("Transfer-Encoding: chunked");
        h.add("Content-Length: " + note.length);
        yield new Case("framing", request("POST", "/notes", h, (Integer.toHexString(note.length) + "\r\n" + new String(note, StandardCharsets.ISO_8859_1)
            + "\r\n0\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1), false));
      }
      case 2 -> {
        h.add("Content-Length: " + (note.length + 1 + random.nextInt(100)));
        yield new Case("framing", request("POST", "/notes", h, note, false));
      }
      case 3 -> {
        h.add("Content-Length: -5");
        yield new Case("framing", request("POST", "/notes", h, note, false));
      }
      case 4 -> {
        h.add("Content-Length: 99999999999999999999");
        yield new Case("framing", request("POST", "/notes", h, note, false));
      }
      default -> {
        // a transfer coding the server does not implement: RFC 9112 (6.1) says 501
        h.add("Transfer-Encoding: gzip, chunked");
        yield new Case("framing", request("POST", "/notes", h, (Integer.toHexString(note.length) + "\r\n" + new String(note, StandardCharsets.ISO_8859_1)
            + "\r\n0\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1), false), 501);
      }
    };
  }

  private Case oddHeaders() {
    String[] headers = {"Authorization: Basic", "Authorization: Basic !!!", "Authorization: Bearer x", "Authorization: Basic "
        + Base64.getEncoder().encodeToString("nobody:x".getBytes(StandardCharsets.UTF_8)), "Expect: 100-continue", "Expect: 200-ok",
        "Accept: application/xml", "Accept: */*;q=bogus", "Accept: ", "Accept-Charset: utf-7", "Content-Encoding: gzip", "Content-Encoding: br",
        "If-Match: \"x\"", "Range: bytes=0-1", "X-Forwarded-For: ::1", "Cookie: JSESSIONID=" + "c".repeat(1000), "Accept-Language: \u00ff\u00fe",
        "Bad Header: x", ": empty name", "X-Nul: a\u0000b", "X-Obs-Fold: a\r\n folded", "Idempotency-Key:" + key()};
    List<String> h = new ArrayList<>(List.of("Content-Type: application/json", "Idempotency-Key: " + key()));
    String extra = headers[random.nextInt(headers.length)];
    if (extra.startsWith("Idempotency-Key:")) {
      h.set(1, extra);
    } else {
      h.add(extra);
    }
    if (random.nextBoolean()) {
      h.add("Authorization: " + credentials.get(random.nextInt(credentials.size())));
    }
    return new Case("odd header fields", post(h, note()));
  }

  // ---- request bytes ---------------------------------------------------------------------------

  private String key() {
    return "\"fuzz-" + UUID.randomUUID() + "\"";
  }

  private byte[] note() {
    return ("{\"title\":\"fuzz " + Long.toString(random.nextLong() & Long.MAX_VALUE, 36) + "\"}").getBytes(StandardCharsets.US_ASCII);
  }

  private String randomLatin1(int length) {
    StringBuilder s = new StringBuilder(length);
    for (int i = 0; i < length; i++) {
      char c = (char) (0x20 + random.nextInt(0xe0));
      s.append(c == 0x7f ? 'x' : c);
    }
    return s.toString();
  }

  private byte[] post(List<String> headers, byte[] body) {
    return request("POST", "/notes", headers, body, true);
  }

  /** Header lines are written as ISO-8859-1, so characters up to U+00FF become single (possibly invalid UTF-8) bytes. */
  private byte[] request(String method, String target, List<String> headers, byte[] body, boolean contentLength) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    StringBuilder head = new StringBuilder();
    head.append(method).append(' ').append(target).append(" HTTP/1.1\r\nHost: ").append(host).append("\r\nConnection: close\r\n");
    for (String h : headers) {
      head.append(h).append("\r\n");
    }
    if (contentLength) {
      head.append("Content-Length: ").append(body.length).append("\r\n");
    }
    head.append("\r\n");
    out.writeBytes(head.toString().getBytes(StandardCharsets.ISO_8859_1));
    out.writeBytes(body);
    return out.toByteArray();
  }

  /** @return the answer's first bytes (up to the end of the first non-1xx head and a little body), or what came before the close */
  private byte[] send(byte[] request) {
    ByteArrayOutputStream answer = new ByteArrayOutputStream();
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
      s.setSoTimeout(30_000);
      OutputStream out = s.getOutputStream();
      InputStream in = s.getInputStream();
      try {
        out.write(request);
        out.flush();
        s.shutdownOutput();
      } catch (IOException closedEarly) {
        // the server may answer (400, 413) and close before reading the whole request: read its answer
      }
      byte[] buf = new byte[8192];
      int n;
      while (answer.size() < 16_384 && (n = in.read(buf)) > 0) {
        answer.write(buf, 0, n);
      }
    } catch (IOException e) {
      // no answer, or a reset after part of one: whatever arrived is judged
    }
    return answer.toByteArray();
  }

  /** @return the first final (non-1xx) status of the answer, 0 if there is none */
  static int status(byte[] answer) {
    String text = new String(answer, StandardCharsets.ISO_8859_1);
    int at = 0;
    while (true) {
      int i = text.indexOf("HTTP/1.", at);
      if (i < 0 || i + 12 > text.length()) {
        return 0;
      }
      try {
        int status = Integer.parseInt(text.substring(i + 9, i + 12));
        if (status >= 200) {
          return status;
        }
      } catch (NumberFormatException e) {
        return 0;
      }
      at = i + 12;
    }
  }

  private static String problemTitle(byte[] answer) {
    String text = new String(answer, StandardCharsets.UTF_8);
    int t = text.indexOf("\"title\":\"");
    if (t < 0) {
      return "";
    }
    int end = text.indexOf('"', t + 9);
    return end < 0 ? "" : text.substring(t + 9, end);
  }

  private static String printable(byte[] bytes, int max) {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < Math.min(bytes.length, max); i++) {
      int b = bytes[i] & 0xff;
      s.append(b >= 0x20 && b < 0x7f ? Character.toString(b) : b == '\r' ? "\\r" : b == '\n' ? "\\n" : String.format("\\x%02x", b));
    }
    return bytes.length > max ? s + "... (" + bytes.length + " bytes)" : s.toString();
  }
}
