package dev.idem.faultproxy;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * HTTP/1.1 message framing (RFC 9112) for the fault proxy: reads a message head and a message body
 * exactly as they were sent, so that the proxy can forward them byte for byte, while enforcing the
 * size limits. Package-private; stateless and thread-safe (the streams passed in are not).
 */
final class Http1 {

  /** The longest chunk-size line (size, extensions, CRLF) accepted. */
  static final int MAX_CHUNK_LINE = 4096;

  private static final Pattern VERSION = Pattern.compile("HTTP/1\\.[01]");
  private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+\\-.^_`|~0-9A-Za-z]+");
  private static final Pattern STATUS = Pattern.compile("[1-9][0-9][0-9]");
  private static final Pattern HEX = Pattern.compile("[0-9A-Fa-f]{1,15}");
  private static final Pattern DIGITS = Pattern.compile("[0-9]{1,18}");

  private Http1() {}

  /** How a message body is delimited. */
  enum Framing {
    /** No body. */
    NONE,
    /** Exactly {@link Body#length} bytes. */
    FIXED,
    /** Chunked transfer coding, up to and including the trailer section. */
    CHUNKED,
    /** Everything until the sender closes the connection (responses only). */
    UNTIL_CLOSE
  }

  /** How a message body is delimited and, for {@link Framing#FIXED}, its length. */
  record Body(Framing framing, long length) {
    static final Body NONE = new Body(Framing.NONE, 0);

    /** @return whether a body follows the head */
    boolean present() {
      return framing != Framing.NONE && !(framing == Framing.FIXED && length == 0);
    }
  }

  /** A parsed message head that keeps the exact bytes it was parsed from. Immutable. */
  static final class Head {
    private final byte[] raw;
    private final String first;
    private final String second;
    private final String third;
    private final List<String[]> fields;

    private Head(byte[] raw, String first, String second, String third, List<String[]> fields) {
      this.raw = raw;
      this.first = first;
      this.second = second;
      this.third = third;
      this.fields = fields;
    }

    /** @return the head exactly as received, including the empty line that ends it; do not modify */
    byte[] raw() {
      return raw;
    }

    /** @return the request method */
    String method() {
      return first;
    }

    /** @return the request-target */
    String target() {
      return second;
    }

    /** @return the HTTP version of a request head, {@code HTTP/1.0} or {@code HTTP/1.1} */
    String requestVersion() {
      return third;
    }

    /** @return the HTTP version of a response head */
    String responseVersion() {
      return first;
    }

    /** @return the status code of a response head */
    int status() {
      return Integer.parseInt(second);
    }

    /** @return the first value of the named field (name matched ignoring case), trimmed */
    Optional<String> field(String name) {
      for (String[] f : fields) {
        if (f[0].equalsIgnoreCase(name)) {
          return Optional.of(f[1]);
        }
      }
      return Optional.empty();
    }

    /** @return every header field as {name, value} (value trimmed), in order; do not modify */
    List<String[]> allFields() {
      return fields;
    }

    /** @return every value of the named field, in order */
    List<String> fields(String name) {
      List<String> values = new ArrayList<>();
      for (String[] f : fields) {
        if (f[0].equalsIgnoreCase(name)) {
          values.add(f[1]);
        }
      }
      return values;
    }

    /** @return the comma-separated tokens of every value of the named field, lower case */
    List<String> tokens(String name) {
      List<String> tokens = new ArrayList<>();
      for (String value : fields(name)) {
        for (String t : value.split(",")) {
          String token = t.trim().toLowerCase(Locale.ROOT);
          if (!token.isEmpty()) {
            tokens.add(token);
          }
        }
      }
      return tokens;
    }

    /**
     * @param version the message's HTTP version
     * @return whether the connection stays open after this message, per its Connection field
     */
    boolean keepAlive(String version) {
      Set<String> connection = new LinkedHashSet<>(tokens("Connection"));
      if (connection.contains("close")) {
        return false;
      }
      return "HTTP/1.1".equals(version) || connection.contains("keep-alive");
    }
  }

  /**
   * Reads one message head: the start line and the header fields up to the empty line. Empty
   * lines before a request line are skipped, as RFC 9112 section 2.2 allows.
   *
   * @param in the stream, positioned at the start of a message
   * @param maxBytes the most bytes the head may have, skipped empty lines included
   * @param request whether to parse a request line (else a status line)
   * @return the head, or {@code null} if the stream ended before the first byte of a message
   * @throws EOFException if the stream ended inside the head
   * @throws HttpFramingException if the head is malformed or longer than {@code maxBytes}
   * @throws IOException if reading fails
   */
  static Head readHead(InputStream in, int maxBytes, boolean request) throws IOException {
    ByteArrayOutputStream raw = new ByteArrayOutputStream(512);
    ByteArrayOutputStream line = new ByteArrayOutputStream(128);
    List<String> lines = new ArrayList<>();
    int total = 0;
    boolean started = false;
    while (true) {
      int b = in.read();
      if (b < 0) {
        if (!started) {
          return null;
        }
        throw new EOFException("connection closed inside the message head");
      }
      if (++total > maxBytes) {
        throw HttpFramingException.tooLarge("message head exceeds " + maxBytes + " bytes");
      }
      if (!started && request && (b == '\r' || b == '\n')) {
        continue;
      }
      started = true;
      raw.write(b);
      if (b != '\n') {
        line.write(b);
        continue;
      }
      String text = line.toString(StandardCharsets.ISO_8859_1);
      line.reset();
      if (text.endsWith("\r")) {
        text = text.substring(0, text.length() - 1);
      }
      if (text.isEmpty()) {
        break;
      }
      lines.add(text);
    }
    if (lines.isEmpty()) {
      throw HttpFramingException.malformed("empty message head");
    }
    String start = lines.get(0);
    String first;
    String second;
    String third;
    if (request) {
      String[] parts = start.split(" ", -1);
      if (parts.length != 3
          || !TOKEN.matcher(parts[0]).matches()
          || parts[1].isEmpty()
          || !VERSION.matcher(parts[2]).matches()) {
        throw HttpFramingException.malformed("not an HTTP/1.x request line: " + abbreviate(start));
      }
      first = parts[0];
      second = parts[1];
      third = parts[2];
    } else {
      String[] parts = start.split(" ", 3);
      if (parts.length < 2
          || !VERSION.matcher(parts[0]).matches()
          || !STATUS.matcher(parts[1]).matches()) {
        throw HttpFramingException.malformed("not an HTTP/1.x status line: " + abbreviate(start));
      }
      first = parts[0];
      second = parts[1];
      third = parts.length == 3 ? parts[2] : "";
    }
    List<String[]> fields = new ArrayList<>(lines.size() - 1);
    for (String text : lines.subList(1, lines.size())) {
      if (text.charAt(0) == ' ' || text.charAt(0) == '\t') {
        throw HttpFramingException.malformed("obsolete line folding in field: " + abbreviate(text));
      }
      int colon = text.indexOf(':');
      if (colon <= 0 || !TOKEN.matcher(text.substring(0, colon)).matches()) {
        throw HttpFramingException.malformed("not a header field: " + abbreviate(text));
      }
      fields.add(new String[] {text.substring(0, colon), text.substring(colon + 1).strip()});
    }
    return new Head(raw.toByteArray(), first, second, third, Collections.unmodifiableList(fields));
  }

  /**
   * Decides how a request body is delimited (RFC 9112 section 6.3). Stricter than a server needs
   * to be: a request with both Transfer-Encoding and Content-Length, or with a transfer coding
   * other than a final {@code chunked}, is rejected.
   *
   * @param request the request head
   * @param maxBody the largest body accepted, in bytes
   * @return the framing
   * @throws HttpFramingException if the framing fields are malformed, or the declared length is
   *     over {@code maxBody}
   */
  static Body requestBody(Head request, long maxBody) throws HttpFramingException {
    List<String> codings = request.tokens("Transfer-Encoding");
    List<String> lengths = request.fields("Content-Length");
    if (!request.fields("Transfer-Encoding").isEmpty()) {
      if (!"HTTP/1.1".equals(request.requestVersion())) {
        throw HttpFramingException.malformed("Transfer-Encoding in an HTTP/1.0 request");
      }
      if (!lengths.isEmpty()) {
        throw HttpFramingException.malformed("both Transfer-Encoding and Content-Length");
      }
      if (codings.isEmpty() || !"chunked".equals(codings.get(codings.size() - 1))) {
        throw HttpFramingException.malformed("request transfer coding is not chunked: " + codings);
      }
      return new Body(Framing.CHUNKED, -1);
    }
    if (!lengths.isEmpty()) {
      long length = contentLength(lengths);
      if (length > maxBody) {
        throw HttpFramingException.tooLarge(
            "request body of " + length + " bytes exceeds " + maxBody + " bytes");
      }
      return length == 0 ? Body.NONE : new Body(Framing.FIXED, length);
    }
    return Body.NONE;
  }

  /**
   * Decides how a response body is delimited (RFC 9112 section 6.3).
   *
   * @param response the final (non-1xx) response head
   * @param requestMethod the method of the request it answers
   * @param maxBody the largest body accepted, in bytes
   * @return the framing
   * @throws HttpFramingException if the framing fields are malformed, or the declared length is
   *     over {@code maxBody}
   */
  static Body responseBody(Head response, String requestMethod, long maxBody)
      throws HttpFramingException {
    int status = response.status();
    if ("HEAD".equals(requestMethod) || status < 200 || status == 204 || status == 304) {
      return Body.NONE;
    }
    if (!response.fields("Transfer-Encoding").isEmpty()) {
      List<String> codings = response.tokens("Transfer-Encoding");
      if (!codings.isEmpty() && "chunked".equals(codings.get(codings.size() - 1))) {
        return new Body(Framing.CHUNKED, -1);
      }
      return new Body(Framing.UNTIL_CLOSE, -1);
    }
    List<String> lengths = response.fields("Content-Length");
    if (!lengths.isEmpty()) {
      long length = contentLength(lengths);
      if (length > maxBody) {
        throw HttpFramingException.tooLarge(
            "response body of " + length + " bytes exceeds " + maxBody + " bytes");
      }
      return new Body(Framing.FIXED, length);
    }
    return new Body(Framing.UNTIL_CLOSE, -1);
  }

  /**
   * Reads a body exactly as sent into {@code out}. The payload (the body without chunk framing)
   * may not exceed {@code maxBody}; the chunk framing (size lines, line ends and trailer fields)
   * may not exceed {@code maxFraming} plus the payload read so far, which bounds what a sender of
   * tiny chunks can make the proxy buffer.
   *
   * @param in the stream, positioned after the head
   * @param body the framing
   * @param maxBody the largest payload accepted, in bytes
   * @param maxFraming the chunk framing allowance, in bytes
   * @param out receives the body bytes exactly as read
   * @throws EOFException if the stream ends before a delimited body is complete
   * @throws HttpFramingException if the chunk framing is malformed or a limit is exceeded
   * @throws IOException if reading fails
   */
  static void readBody(
      InputStream in, Body body, long maxBody, int maxFraming, ByteArrayOutputStream out)
      throws IOException {
    readBody(in, body, maxBody, maxFraming, out, null);
  }

  /**
   * As {@link #readBody(InputStream, Body, long, int, ByteArrayOutputStream)}, and also writes
   * the payload alone (without chunk framing and trailer fields) to {@code payloadOut}.
   *
   * @param payloadOut receives the payload bytes, or {@code null}
   */
  static void readBody(
      InputStream in,
      Body body,
      long maxBody,
      int maxFraming,
      ByteArrayOutputStream out,
      ByteArrayOutputStream payloadOut)
      throws IOException {
    byte[] buffer = new byte[8192];
    switch (body.framing()) {
      case NONE:
        return;
      case FIXED:
        copy(in, body.length(), buffer, out, payloadOut);
        return;
      case UNTIL_CLOSE:
        long payload = 0;
        while (true) {
          int n = in.read(buffer);
          if (n < 0) {
            return;
          }
          payload += n;
          if (payload > maxBody) {
            throw HttpFramingException.tooLarge("body exceeds " + maxBody + " bytes");
          }
          out.write(buffer, 0, n);
          if (payloadOut != null) {
            payloadOut.write(buffer, 0, n);
          }
        }
      case CHUNKED:
        readChunked(in, maxBody, maxFraming, buffer, out, payloadOut);
        return;
      default:
        throw new IllegalStateException("unknown framing " + body.framing());
    }
  }

  private static void readChunked(
      InputStream in,
      long maxBody,
      int maxFraming,
      byte[] buffer,
      ByteArrayOutputStream out,
      ByteArrayOutputStream payloadOut)
      throws IOException {
    long payload = 0;
    long framing = 0;
    while (true) {
      String sizeLine = readLine(in, out);
      framing += sizeLine.length() + 2;
      int semicolon = sizeLine.indexOf(';');
      String hex = (semicolon < 0 ? sizeLine : sizeLine.substring(0, semicolon)).strip();
      if (!HEX.matcher(hex).matches()) {
        throw HttpFramingException.malformed("not a chunk size: " + abbreviate(sizeLine));
      }
      long size = Long.parseLong(hex, 16);
      if (size > maxBody - payload) {
        throw HttpFramingException.tooLarge("body exceeds " + maxBody + " bytes");
      }
      if (size == 0) {
        while (true) {
          String trailer = readLine(in, out);
          framing += trailer.length() + 2;
          checkFraming(framing, payload, maxFraming);
          if (trailer.isEmpty()) {
            return;
          }
        }
      }
      copy(in, size, buffer, out, payloadOut);
      payload += size;
      String end = readLine(in, out);
      framing += 2;
      if (!end.isEmpty()) {
        throw HttpFramingException.malformed("chunk data not followed by CRLF");
      }
      checkFraming(framing, payload, maxFraming);
    }
  }

  private static void checkFraming(long framing, long payload, int maxFraming)
      throws HttpFramingException {
    if (framing > maxFraming + payload) {
      throw HttpFramingException.tooLarge("chunk framing exceeds " + maxFraming + " bytes");
    }
  }

  /** Reads a line ending in LF into {@code out}; returns it without CR LF. */
  private static String readLine(InputStream in, ByteArrayOutputStream out) throws IOException {
    StringBuilder line = new StringBuilder();
    int length = 0;
    while (true) {
      int b = in.read();
      if (b < 0) {
        throw new EOFException("connection closed inside the chunked body");
      }
      out.write(b);
      if (++length > MAX_CHUNK_LINE) {
        throw HttpFramingException.tooLarge("chunk line exceeds " + MAX_CHUNK_LINE + " bytes");
      }
      if (b == '\n') {
        int last = line.length() - 1;
        if (last >= 0 && line.charAt(last) == '\r') {
          line.setLength(last);
        }
        return line.toString();
      }
      line.append((char) b);
    }
  }

  private static void copy(
      InputStream in,
      long length,
      byte[] buffer,
      ByteArrayOutputStream out,
      ByteArrayOutputStream payloadOut)
      throws IOException {
    long remaining = length;
    while (remaining > 0) {
      int n = in.read(buffer, 0, (int) Math.min(buffer.length, remaining));
      if (n < 0) {
        throw new EOFException(
            "connection closed after " + (length - remaining) + " of " + length + " body bytes");
      }
      out.write(buffer, 0, n);
      if (payloadOut != null) {
        payloadOut.write(buffer, 0, n);
      }
      remaining -= n;
    }
  }

  private static long contentLength(List<String> values) throws HttpFramingException {
    long length = -1;
    for (String value : values) {
      for (String part : value.split(",", -1)) {
        String p = part.strip();
        if (!DIGITS.matcher(p).matches()) {
          throw HttpFramingException.malformed("invalid Content-Length: " + abbreviate(value));
        }
        long l = Long.parseLong(p);
        if (length >= 0 && l != length) {
          throw HttpFramingException.malformed("conflicting Content-Length values: " + values);
        }
        length = l;
      }
    }
    return length;
  }

  /** @return {@code s} cut to at most 80 characters, for error messages */
  static String abbreviate(String s) {
    return s.length() <= 80 ? s : s.substring(0, 77) + "...";
  }
}
