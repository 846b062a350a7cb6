package dev.idem.servlet.internal;

import dev.idem.core.http.ProblemDetails;

import jakarta.servlet.ServletOutputStream;
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
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

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
  /** Status, header fields, cookies, content type, encoding, locale, trailers: all but the body. */
  private final CapturedHead head = new CapturedHead();
  private final CapturedBody body;
  private int bufferSize;
  /**
   * Set by a flush, {@code sendError} or {@code sendRedirect}; an overflow commits too ({@link
   * #committed()}).
   */
  private boolean committed;

  /** The handler's output stream, or {@code null} until it asks for it. */
  private CapturedBody.@Nullable Stream stream;
  /** The writer's encoder, or {@code null} without a writer or once it is closed. */
  private @Nullable OutputStreamWriter encoder;
  /** The handler's writer, or {@code null} until it asks for it. */
  private CapturedBody.@Nullable Writer writer;

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
    this.body = new CapturedBody(maxBodyBytes, this::overflow);
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
    this.beforeOverflow = Objects.requireNonNull(hook, "hook");
  }

  /** @return whether later changes to status and header fields are ignored: flushed, sent, or overflowed */
  private boolean committed() {
    return committed || body.overflowed();
  }

  private void commit() {
    committed = true;
  }

  // ---- status -------------------------------------------------------------------------------

  @Override
  public void setStatus(int sc) {
    if (!committed()) {
      head.status = sc;
    }
  }

  @Override
  public int getStatus() {
    return head.status;
  }

  @Override
  public void sendError(int sc) throws IOException {
    sendError(sc, null);
  }

  @Override
  public void sendError(int sc, @Nullable String msg) throws IOException {
    if (committed()) {
      throw new IllegalStateException("the response is already committed");
    }
    resetContent();
    head.status = sc;
    head.remove("content-encoding"); // the problem body is not encoded
    head.contentType(ProblemDetails.MEDIA_TYPE, false);
    head.charset = null;
    byte[] problem = new ProblemDetails("about:blank", ProblemDetails.reasonPhrase(sc), sc, msg).toJson();
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
    if (committed()) {
      throw new IllegalStateException("the response is already committed");
    }
    if (location == null) {
      throw new IllegalArgumentException("redirect location must not be null");
    }
    if (clearBuffer) {
      resetContent();
    }
    head.status = sc;
    head.set("Location", resolve(location));
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
  public void setHeader(@Nullable String name, @Nullable String value) {
    if (committed() || name == null) {
      return;
    }
    if (special(name, value, true)) {
      return;
    }
    if (value == null) {
      head.remove(name);
    } else {
      head.set(name, value);
    }
  }

  @Override
  public void addHeader(@Nullable String name, @Nullable String value) {
    if (committed() || name == null || value == null) {
      return;
    }
    if (special(name, value, false)) {
      return;
    }
    head.add(name, value);
  }

  /** Content-Type and Content-Length have their own setters; route the fields there. */
  private boolean special(String name, @Nullable String value, boolean set) {
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
  public boolean containsHeader(@Nullable String name) {
    return getHeader(name) != null;
  }

  @Override
  public @Nullable String getHeader(@Nullable String name) {
    return name == null ? null : head.first(name);
  }

  @Override
  public Collection<String> getHeaders(@Nullable String name) {
    return name == null ? List.of() : head.all(name);
  }

  @Override
  public Collection<String> getHeaderNames() {
    return head.names();
  }

  @Override
  public void addCookie(@Nullable Cookie cookie) {
    if (!committed() && cookie != null) {
      head.addCookie(cookie);
    }
  }

  @Override
  public void setTrailerFields(Supplier<Map<String, String>> supplier) {
    if (committed()) {
      throw new IllegalStateException("the response is already committed");
    }
    head.trailers = supplier;
  }

  @Override
  public @Nullable Supplier<Map<String, String>> getTrailerFields() {
    return head.trailers;
  }

  // ---- content type, encoding, locale -------------------------------------------------------

  @Override
  public void setContentType(@Nullable String type) {
    if (!committed()) {
      head.contentType(type, writer != null);
    }
  }

  @Override
  public @Nullable String getContentType() {
    return head.contentType();
  }

  @Override
  public void setCharacterEncoding(@Nullable String encoding) {
    if (committed() || writer != null) {
      return;
    }
    head.characterEncoding(encoding);
  }

  /**
   * Servlet 6.1: same as {@link #setCharacterEncoding(String)} with the charset's name.
   *
   * @param encoding the charset, or {@code null} to clear it
   */
  public void setCharacterEncoding(@Nullable Charset encoding) {
    setCharacterEncoding(encoding == null ? null : encoding.name());
  }

  @Override
  public String getCharacterEncoding() {
    // Without an explicit choice, the container's default (ISO-8859-1, or the context's
    // response-character-encoding); reading it does not change the real response.
    return head.charset != null ? head.charset : super.getCharacterEncoding();
  }

  @Override
  public void setLocale(@Nullable Locale loc) {
    if (committed() || loc == null) {
      return;
    }
    head.locale = loc;
    head.set("Content-Language", loc.toLanguageTag());
  }

  @Override
  public Locale getLocale() {
    return head.locale != null ? head.locale : super.getLocale();
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
      stream = new CapturedBody.Stream(body, this::commit);
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
      head.charset = name; // fixed from now on, and named in the Content-Type
      encoder = new OutputStreamWriter(body, cs);
      writer = new CapturedBody.Writer(encoder, this::commit, () -> encoder = null);
    }
    return writer;
  }

  @Override
  public void setBufferSize(int size) {
    if (committed() || body.bytes.size() > 0) {
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
    if (body.overflowed()) {
      // Overflowed: a real flush now, the writer's pending characters included.
      if (encoder != null) {
        encoder.flush();
      }
      body.flush();
    }
  }

  @Override
  public boolean isCommitted() {
    return committed();
  }

  @Override
  public void resetBuffer() {
    if (committed()) {
      throw new IllegalStateException("the response is already committed");
    }
    resetContent();
  }

  @Override
  public void reset() {
    if (committed()) {
      throw new IllegalStateException("the response is already committed");
    }
    resetContent();
    head.clear();
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
    body.discard();
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
    } else if (body.overflowed()) {
      body.flush();
    }
  }

  /**
   * @return whether the body grew past the limit and went to the container's response; then there
   *     is no body to store and {@link #body()} and {@link #writeTo} refuse
   */
  public boolean overflowed() {
    return body.overflowed();
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
    return head.fields();
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
    head.writeTo(response);
    response.setContentLength(bytes.length);
    if (bytes.length > 0) {
      response.getOutputStream().write(bytes);
    }
  }

  /**
   * The body passes the limit: sends the head to the container's response, for the body to follow
   * straight through ({@link CapturedBody}); the capture is committed from then on.
   */
  private OutputStream overflow() throws IOException {
    beforeOverflow.run(); // may throw: then nothing has reached the container's response
    HttpServletResponse real = (HttpServletResponse) getResponse();
    head.writeTo(real);
    return real.getOutputStream();
  }
}
