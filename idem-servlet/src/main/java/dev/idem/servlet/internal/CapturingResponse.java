package dev.idem.servlet.internal;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.io.UnsupportedEncodingException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.Charset;
import java.nio.charset.IllegalCharsetNameException;
import java.nio.charset.UnsupportedCharsetException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * A response that keeps everything the handler does in memory and touches the container's response
 * not at all until {@link #writeTo(HttpServletResponse)}: status, header fields, cookies, content
 * type and character encoding, locale, trailer supplier, and the body from either {@link
 * #getOutputStream()} or {@link #getWriter()}.
 *
 * <p>The body is held up to a limit of bytes. A write that would take it past the limit
 * <em>overflows</em> the capture: status, header fields, cookies, trailer supplier and the bytes
 * held so far are written to the container's response at once, the buffer is dropped, and from
 * then on the body, flushes included, goes straight to the container's output stream (without a
 * {@code Content-Length}, so the container frames it). The capture then behaves as a committed
 * response; {@link #overflowed()} tells the filter that it holds no body to store, and {@link
 * #bodyLength()} still counts every byte sent. Memory stays bounded by the limit.
 *
 * <p>It imitates a container's response closely enough for handlers that look at it: {@link
 * #flushBuffer()}, a flush or a close of the stream or writer, {@link #sendError} and {@link
 * #sendRedirect} <em>commit</em> it ({@link #isCommitted()} turns {@code true}, later status and
 * header changes are ignored, {@link #reset()} and {@link #sendError} throw {@link
 * IllegalStateException}), but nothing reaches the network before the filter decides, unless the
 * body overflows. {@link #sendError} produces an RFC 9457 {@code about:blank} problem body, so the
 * first answer and every replay carry the same bytes; {@link #sendRedirect} resolves a relative
 * location against the request URI and leaves the body empty.
 *
 * <p>Methods added by Servlet 6.1 ({@code sendRedirect} with a status, {@code sendEarlyHints}, {@code
 * setCharacterEncoding(Charset)}) are overridden too, without {@code @Override} since this module
 * compiles against Servlet 6.0, so that a 6.1 container's wrapper cannot forward them to the real
 * response. One instance serves one request on one thread; not thread-safe.
 */
public final class CapturingResponse extends HttpServletResponseWrapper {

  private static final DateTimeFormatter HTTP_DATE =
      DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

  private final String requestUri;
  private final int maxBodyBytes;
  private final Body body;
  /** Lower-case name to the field (first spelling, values). */
  private final Map<String, Field> headers = new LinkedHashMap<>();
  private final List<Cookie> cookies = new ArrayList<>();
  private int status = SC_OK;
  private String contentType;
  private String charset;
  private Locale locale;
  private int bufferSize;
  private boolean committed;
  private Supplier<Map<String, String>> trailers;

  private CapturingStream stream;
  private OutputStreamWriter encoder;
  private CapturingWriter writer;
  /** The container's output stream once the body overflowed; {@code null} while capturing. */
  private OutputStream direct;

  /**
   * A capture without a practical limit (the body may grow to about 2 GiB).
   *
   * @param response the container's response, never {@code null}; only read (its defaults) until
   *     {@link #writeTo}
   * @param requestUri the request URI, to resolve a relative redirect location against
   */
  public CapturingResponse(HttpServletResponse response, String requestUri) {
    this(response, requestUri, Integer.MAX_VALUE);
  }

  /**
   * @param response the container's response, never {@code null}; only read (its defaults) until
   *     {@link #writeTo} or an overflow
   * @param requestUri the request URI, to resolve a relative redirect location against
   * @param maxBodyBytes the most body bytes held in memory, 0 or more; one more overflows
   * @throws IllegalArgumentException if {@code maxBodyBytes} is negative
   */
  public CapturingResponse(HttpServletResponse response, String requestUri, int maxBodyBytes) {
    super(response);
    if (maxBodyBytes < 0) {
      throw new IllegalArgumentException("maxBodyBytes must not be negative, was " + maxBodyBytes);
    }
    this.requestUri = requestUri;
    this.maxBodyBytes = maxBodyBytes;
    this.body = new Body(); // after maxBodyBytes, which its buffer reads
    this.bufferSize = 8192;
  }

  /** Runs before the first byte reaches the container's response; see {@link #beforeOverflow(Runnable)}. */
  private Runnable beforeOverflow = () -> {};

  /**
   * @param hook run once the body is about to overflow, before anything reaches the container's
   *     response (the transactional filter claims the key there); if it throws, the write that
   *     overflowed throws the same exception and the capture stays as it was; never {@code null}
   * @throws NullPointerException if {@code hook} is {@code null}
   */
  public void beforeOverflow(Runnable hook) {
    this.beforeOverflow = java.util.Objects.requireNonNull(hook, "hook");
  }

  // ---- status -------------------------------------------------------------------------------

  @Override
  public void setStatus(int sc) {
    if (!committed) {
      status = sc;
    }
  }

  @Override
  public int getStatus() {
    return status;
  }

  @Override
  public void sendError(int sc) throws IOException {
    sendError(sc, null);
  }

  @Override
  public void sendError(int sc, String msg) throws IOException {
    if (committed) {
      throw new IllegalStateException("the response is already committed");
    }
    resetContent();
    status = sc;
    headers.remove("content-encoding"); // the problem body is not encoded
    contentType = Problem.MEDIA_TYPE;
    charset = null;
    byte[] problem = new Problem("about:blank", Problem.reasonPhrase(sc), sc, msg).toJson();
    body.write(problem, 0, problem.length); // may overflow, like any body
    body.sealed = true; // later output is ignored, as by a container
    committed = true;
  }

  @Override
  public void sendRedirect(String location) throws IOException {
    sendRedirect(location, SC_FOUND, true);
  }

  /**
   * Servlet 6.1: a redirect with another status, clearing the body.
   *
   * @param location the target, relative ones resolved against the request URI
   * @param sc the status, normally 3xx
   * @throws IOException never; declared by the Servlet API
   * @throws IllegalStateException if the response is committed
   */
  public void sendRedirect(String location, int sc) throws IOException {
    sendRedirect(location, sc, true);
  }

  /**
   * Servlet 6.1: a 302 redirect.
   *
   * @param location the target, relative ones resolved against the request URI
   * @param clearBuffer whether to discard the body written so far
   * @throws IOException never; declared by the Servlet API
   * @throws IllegalStateException if the response is committed
   */
  public void sendRedirect(String location, boolean clearBuffer) throws IOException {
    sendRedirect(location, SC_FOUND, clearBuffer);
  }

  /**
   * Servlet 6.1: the general redirect; the others delegate here. Sets the status and {@code
   * Location}, commits the capture and ignores later output.
   *
   * @param location the target, relative ones resolved against the request URI; never {@code null}
   * @param sc the status, normally 3xx
   * @param clearBuffer whether to discard the body written so far
   * @throws IOException never; declared by the Servlet API
   * @throws IllegalArgumentException if {@code location} is {@code null}
   * @throws IllegalStateException if the response is committed
   */
  public void sendRedirect(String location, int sc, boolean clearBuffer) throws IOException {
    if (committed) {
      throw new IllegalStateException("the response is already committed");
    }
    if (location == null) {
      throw new IllegalArgumentException("redirect location must not be null");
    }
    if (clearBuffer) {
      resetContent();
    }
    status = sc;
    setField("Location", resolve(location));
    body.sealed = true;
    committed = true;
  }

  /** Servlet 6.1: interim 103 responses are not captured, so this does nothing. */
  public void sendEarlyHints() {}

  private String resolve(String location) {
    try {
      URI uri = new URI(location);
      if (uri.isAbsolute() || location.startsWith("/") || requestUri == null) {
        return location;
      }
      return new URI(requestUri).resolve(uri).toString();
    } catch (URISyntaxException e) {
      return location;
    }
  }

  // ---- header fields ------------------------------------------------------------------------

  @Override
  public void setHeader(String name, String value) {
    if (committed || name == null) {
      return;
    }
    if (special(name, value, true)) {
      return;
    }
    if (value == null) {
      headers.remove(name.toLowerCase(Locale.ROOT));
    } else {
      setField(name, value);
    }
  }

  @Override
  public void addHeader(String name, String value) {
    if (committed || name == null || value == null) {
      return;
    }
    if (special(name, value, false)) {
      return;
    }
    headers.computeIfAbsent(name.toLowerCase(Locale.ROOT), k -> new Field(name)).values.add(value);
  }

  /** Content-Type and Content-Length have their own setters; route the fields there. */
  private boolean special(String name, String value, boolean set) {
    if (name.equalsIgnoreCase("Content-Type")) {
      if (value != null || set) {
        setContentType(value);
      }
      return true;
    }
    if (name.equalsIgnoreCase("Content-Length")) {
      return true; // recomputed from the captured body
    }
    return false;
  }

  private void setField(String name, String value) {
    Field f = new Field(name);
    f.values.add(value);
    headers.put(name.toLowerCase(Locale.ROOT), f);
  }

  @Override
  public void setIntHeader(String name, int value) {
    setHeader(name, Integer.toString(value));
  }

  @Override
  public void addIntHeader(String name, int value) {
    addHeader(name, Integer.toString(value));
  }

  @Override
  public void setDateHeader(String name, long date) {
    setHeader(name, HTTP_DATE.format(Instant.ofEpochMilli(date)));
  }

  @Override
  public void addDateHeader(String name, long date) {
    addHeader(name, HTTP_DATE.format(Instant.ofEpochMilli(date)));
  }

  @Override
  public boolean containsHeader(String name) {
    return getHeader(name) != null;
  }

  @Override
  public String getHeader(String name) {
    if (name == null) {
      return null;
    }
    if (name.equalsIgnoreCase("Content-Type")) {
      return getContentType();
    }
    Field f = headers.get(name.toLowerCase(Locale.ROOT));
    return f == null || f.values.isEmpty() ? null : f.values.get(0);
  }

  @Override
  public Collection<String> getHeaders(String name) {
    if (name == null) {
      return List.of();
    }
    if (name.equalsIgnoreCase("Content-Type")) {
      String ct = getContentType();
      return ct == null ? List.of() : List.of(ct);
    }
    Field f = headers.get(name.toLowerCase(Locale.ROOT));
    return f == null ? List.of() : List.copyOf(f.values);
  }

  @Override
  public Collection<String> getHeaderNames() {
    List<String> names = new ArrayList<>();
    if (getContentType() != null) {
      names.add("Content-Type");
    }
    headers.values().forEach(f -> names.add(f.name));
    return names;
  }

  @Override
  public void addCookie(Cookie cookie) {
    if (!committed && cookie != null) {
      cookies.add(cookie);
    }
  }

  @Override
  public void setTrailerFields(Supplier<Map<String, String>> supplier) {
    if (committed) {
      throw new IllegalStateException("the response is already committed");
    }
    this.trailers = supplier;
  }

  @Override
  public Supplier<Map<String, String>> getTrailerFields() {
    return trailers;
  }

  // ---- content type, encoding, locale -------------------------------------------------------

  @Override
  public void setContentType(String type) {
    if (committed) {
      return;
    }
    if (type == null) {
      contentType = null;
      if (writer == null) {
        charset = null;
      }
      return;
    }
    String declared = charsetParameter(type);
    if (declared != null && writer == null) {
      charset = declared;
    }
    contentType = declared != null && writer != null ? withoutCharset(type) : type;
  }

  @Override
  public String getContentType() {
    if (contentType == null) {
      return null;
    }
    if (charsetParameter(contentType) != null || charset == null) {
      return contentType;
    }
    return contentType + ";charset=" + charset;
  }

  @Override
  public void setCharacterEncoding(String encoding) {
    if (committed || writer != null) {
      return;
    }
    charset = encoding;
    if (contentType != null && charsetParameter(contentType) != null) {
      contentType = withoutCharset(contentType);
    }
  }

  /**
   * Servlet 6.1: same as {@link #setCharacterEncoding(String)} with the charset's name.
   *
   * @param encoding the charset, or {@code null} to clear it
   */
  public void setCharacterEncoding(Charset encoding) {
    setCharacterEncoding(encoding == null ? null : encoding.name());
  }

  @Override
  public String getCharacterEncoding() {
    // Without an explicit choice, the container's default (ISO-8859-1, or the context's
    // response-character-encoding); reading it does not change the real response.
    return charset != null ? charset : super.getCharacterEncoding();
  }

  @Override
  public void setLocale(Locale loc) {
    if (committed || loc == null) {
      return;
    }
    locale = loc;
    setField("Content-Language", loc.toLanguageTag());
  }

  @Override
  public Locale getLocale() {
    return locale != null ? locale : super.getLocale();
  }

  @Override
  public void setContentLength(int len) {
    // the Content-Length sent is the captured body's
  }

  @Override
  public void setContentLengthLong(long len) {
    // the Content-Length sent is the captured body's
  }

  // ---- body ---------------------------------------------------------------------------------

  @Override
  public ServletOutputStream getOutputStream() {
    if (writer != null) {
      throw new IllegalStateException("getWriter() has already been called for this response");
    }
    if (stream == null) {
      stream = new CapturingStream();
    }
    return stream;
  }

  @Override
  public PrintWriter getWriter() throws UnsupportedEncodingException {
    if (stream != null) {
      throw new IllegalStateException("getOutputStream() has already been called for this response");
    }
    if (writer == null) {
      String name = getCharacterEncoding();
      if (name == null) {
        name = "ISO-8859-1";
      }
      Charset cs;
      try {
        cs = Charset.forName(name);
      } catch (IllegalCharsetNameException | UnsupportedCharsetException e) {
        throw new UnsupportedEncodingException(name);
      }
      charset = name; // fixed from now on, and named in the Content-Type
      encoder = new OutputStreamWriter(body, cs);
      writer = new CapturingWriter(encoder);
    }
    return writer;
  }

  @Override
  public void setBufferSize(int size) {
    if (committed || body.bytes.size() > 0) {
      throw new IllegalStateException("setBufferSize() after content was written");
    }
    bufferSize = size;
  }

  @Override
  public int getBufferSize() {
    return bufferSize;
  }

  @Override
  public void flushBuffer() throws IOException {
    committed = true;
    if (direct != null) {
      // Overflowed: a real flush now, the writer's pending characters included.
      if (encoder != null) {
        encoder.flush();
      }
      direct.flush();
    }
  }

  @Override
  public boolean isCommitted() {
    return committed;
  }

  @Override
  public void resetBuffer() {
    if (committed) {
      throw new IllegalStateException("the response is already committed");
    }
    resetContent();
  }

  @Override
  public void reset() {
    if (committed) {
      throw new IllegalStateException("the response is already committed");
    }
    resetContent();
    status = SC_OK;
    headers.clear();
    cookies.clear();
    contentType = null;
    charset = null;
    locale = null;
    stream = null;
    writer = null;
    encoder = null;
  }

  /**
   * Discards the body, including what the writer's encoder holds. Only called before commit, so
   * never after an overflow.
   */
  private void resetContent() {
    if (encoder != null) {
      body.discarding = true; // what the encoder still holds is dropped, never overflowed
      try {
        encoder.flush();
      } catch (IOException e) {
        throw new IllegalStateException(e); // cannot happen: nothing is written
      } finally {
        body.discarding = false;
      }
    }
    body.bytes.reset();
    body.written = 0;
  }

  // ---- results ------------------------------------------------------------------------------

  /**
   * Ends the handler's output: encodes the writer's pending characters into the body, which may
   * overflow it, and, after an overflow, flushes the container's output stream. Call once the
   * handler has returned and before {@link #overflowed()}, {@link #body()} or {@link #writeTo}.
   *
   * @throws IOException if writing to the container's response fails after an overflow
   */
  public void finish() throws IOException {
    if (encoder != null) {
      encoder.flush(); // flushes the body too, so the container's stream after an overflow
    } else if (direct != null) {
      direct.flush();
    }
  }

  /**
   * @return whether the body grew past the limit and went to the container's response; then there
   *     is no body to store and {@link #body()} and {@link #writeTo} refuse
   */
  public boolean overflowed() {
    return direct != null;
  }

  /**
   * @return how many body bytes the handler has written so far (after character encoding), whether
   *     held or, after an overflow, sent; what a reset discarded is not counted. Call {@link
   *     #finish()} first to count the writer's pending characters.
   */
  public long bodyLength() {
    return body.written;
  }

  /**
   * @return the body written so far, with the writer's pending characters encoded
   * @throws IllegalStateException if the body overflowed (or overflows while the writer's pending
   *     characters are encoded)
   */
  public byte[] body() {
    try {
      finish();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (overflowed()) {
      throw new IllegalStateException("the response body passed " + maxBodyBytes + " bytes and went to the client; it is not held");
    }
    return body.bytes.toByteArray();
  }

  /**
   * @return every header field the handler set, in order, name as first spelled to values,
   *     Content-Type included as a field; never {@code null}
   */
  public Map<String, List<String>> headerFields() {
    Map<String, List<String>> all = new LinkedHashMap<>();
    String ct = getContentType();
    if (ct != null) {
      all.put("Content-Type", List.of(ct));
    }
    headers.values().forEach(f -> all.put(f.name, List.copyOf(f.values)));
    return all;
  }

  /**
   * Writes the captured response to the container's response as it is, cookies and every header
   * field included (this is the first answer, not a replay), with a {@code Content-Length}; but
   * not an {@code Idempotency-Key} field the handler set, since the filter echoes the request's own.
   *
   * @param response the container's uncommitted response, never {@code null}
   * @throws IOException if writing fails
   * @throws IllegalStateException if the body overflowed: it was written already
   */
  public void writeTo(HttpServletResponse response) throws IOException {
    byte[] bytes = body();
    writeHead(response);
    response.setContentLength(bytes.length);
    if (bytes.length > 0) {
      response.getOutputStream().write(bytes);
    }
  }

  /** Status, header fields, cookies and trailer supplier, without framing fields. */
  private void writeHead(HttpServletResponse response) {
    response.setStatus(status);
    String ct = getContentType();
    if (ct != null) {
      response.setContentType(ct);
    }
    for (Field f : headers.values()) {
      String lower = f.name.toLowerCase(Locale.ROOT);
      if (lower.equals("transfer-encoding") || lower.equals("content-length")) {
        continue; // framing is the container's, for the bytes written here
      }
      if (lower.equals("idempotency-key")) {
        continue; // the filter sets it itself, to the request's field: never twice, never another value
      }
      for (String v : f.values) {
        response.addHeader(f.name, v);
      }
    }
    for (Cookie c : cookies) {
      response.addCookie(c);
    }
    if (trailers != null) {
      response.setTrailerFields(trailers);
    }
  }

  /**
   * The body passes the limit: sends the head and what is held to the container's response, drops
   * the buffer, and sends everything after straight through. Commits the capture.
   */
  private void overflow() throws IOException {
    beforeOverflow.run(); // may throw: then nothing has reached the container's response
    HttpServletResponse real = (HttpServletResponse) getResponse();
    writeHead(real);
    OutputStream out = real.getOutputStream();
    body.bytes.writeTo(out);
    body.bytes.release();
    direct = out;
    committed = true;
  }

  private static String charsetParameter(String type) {
    for (String param : type.split(";")) {
      String p = param.trim();
      if (p.regionMatches(true, 0, "charset=", 0, 8)) {
        String v = p.substring(8).trim();
        if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) {
          v = v.substring(1, v.length() - 1);
        }
        return v.isEmpty() ? null : v;
      }
    }
    return null;
  }

  private static String withoutCharset(String type) {
    StringBuilder out = new StringBuilder();
    for (String param : type.split(";")) {
      if (param.trim().regionMatches(true, 0, "charset=", 0, 8)) {
        continue;
      }
      if (out.length() > 0) {
        out.append(';');
      }
      out.append(param.trim());
    }
    return out.toString();
  }

  private static final class Field {
    final String name;
    final List<String> values = new ArrayList<>(1);

    Field(String name) {
      this.name = name;
    }
  }

  /**
   * The body: in memory up to the limit, then the container's output stream. Flushing it does not
   * commit anything while it is in memory; closing it never closes the container's stream.
   */
  private final class Body extends OutputStream {
    final BoundedBuffer bytes = new BoundedBuffer(maxBodyBytes);
    /** Set by sendError and sendRedirect: the body is final, later writes are dropped. */
    boolean sealed;
    /** Set while a reset drains the encoder: what it holds is dropped. */
    boolean discarding;
    /** Body bytes accepted since the last reset, held or sent. */
    long written;

    @Override
    public void write(int b) throws IOException {
      if (sealed || discarding) {
        return;
      }
      if (direct == null && bytes.size() >= maxBodyBytes) {
        overflow();
      }
      if (direct != null) {
        direct.write(b);
      } else {
        bytes.write(b);
      }
      written++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      Objects.checkFromIndexSize(off, len, b.length);
      if (sealed || discarding || len == 0) {
        return;
      }
      if (direct == null && len > maxBodyBytes - bytes.size()) {
        overflow();
      }
      if (direct != null) {
        direct.write(b, off, len);
      } else {
        bytes.write(b, off, len);
      }
      written += len;
    }

    @Override
    public void flush() throws IOException {
      if (direct != null) {
        direct.flush();
      }
    }
  }

  /**
   * A byte buffer whose capacity never exceeds its limit (unlike {@link
   * java.io.ByteArrayOutputStream}, which may double past it); callers keep within the limit.
   */
  static final class BoundedBuffer {
    private final int limit;
    private byte[] buf = new byte[0];
    private int count;

    BoundedBuffer(int limit) {
      this.limit = limit;
    }

    int size() {
      return count;
    }

    void write(int b) {
      ensure(count + 1L);
      buf[count++] = (byte) b;
    }

    void write(byte[] b, int off, int len) {
      ensure((long) count + len);
      System.arraycopy(b, off, buf, count, len);
      count += len;
    }

    private void ensure(long needed) {
      if (needed > limit) {
        throw new IllegalStateException("buffer limit " + limit + " exceeded"); // the caller overflows first
      }
      if (needed > buf.length) {
        long grown = Math.max(needed, Math.max(256L, 2L * buf.length));
        buf = Arrays.copyOf(buf, (int) Math.min(grown, limit));
      }
    }

    void reset() {
      count = 0;
    }

    /** Frees the memory. */
    void release() {
      buf = new byte[0];
      count = 0;
    }

    byte[] toByteArray() {
      return Arrays.copyOf(buf, count);
    }

    void writeTo(OutputStream out) throws IOException {
      if (count > 0) {
        out.write(buf, 0, count);
      }
    }

    /** @return the capacity in bytes, never more than the limit */
    int capacity() {
      return buf.length;
    }
  }

  private final class CapturingStream extends ServletOutputStream {
    private boolean closed;

    @Override
    public void write(int b) throws IOException {
      check();
      body.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      check();
      body.write(b, off, len);
    }

    private void check() throws IOException {
      if (closed) {
        throw new IOException("the response output stream is closed");
      }
    }

    @Override
    public void flush() throws IOException {
      committed = true;
      body.flush();
    }

    @Override
    public void close() throws IOException {
      closed = true;
      committed = true;
      body.flush(); // the container's stream stays open: the filter and the container finish it
    }

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public void setWriteListener(WriteListener writeListener) {
      throw new IllegalStateException(
          "non-blocking writes need asynchronous processing, which the idempotency filter does not support");
    }
  }

  private final class CapturingWriter extends PrintWriter {
    CapturingWriter(OutputStreamWriter out) {
      super(out, false);
    }

    @Override
    public void flush() {
      super.flush();
      committed = true;
    }

    @Override
    public void close() {
      super.flush();
      committed = true;
      super.close();
      encoder = null; // drained above and closed now
    }
  }
}
