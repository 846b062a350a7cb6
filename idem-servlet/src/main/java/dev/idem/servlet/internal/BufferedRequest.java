package dev.idem.servlet.internal;

import dev.idem.core.Fingerprint;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UnsupportedEncodingException;
import java.net.URLDecoder;
import java.nio.charset.Charset;
import java.nio.charset.IllegalCharsetNameException;
import java.nio.charset.StandardCharsets;
import java.nio.charset.UnsupportedCharsetException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The request as the handler sees it behind the filter, with its body readable as it would be
 * without the filter. Two kinds:
 *
 * <ul>
 *   <li>{@link #BufferedRequest(HttpServletRequest, byte[]) bytes}: the filter read the body into
 *       memory (JSON, {@code application/x-www-form-urlencoded}, binary, any other type). {@link
 *       #getInputStream()} and {@link #getReader()} replay those bytes, {@link
 *       #getContentLengthLong()} is their count, and the parameters of a form body are parsed from
 *       them (query string first, then the body), since the container can no longer read the
 *       consumed stream.
 *   <li>{@link #parsedByContainer(HttpServletRequest) parsed by the container}: a {@code
 *       multipart/form-data} body that the container parsed into parts with the servlet's own
 *       multipart configuration ({@link FormParts}); {@link #getParts()}, {@link #getPart(String)}
 *       and the parameters are the container's, exactly as without the filter.
 * </ul>
 *
 * <p>{@link #getParts()} is always the container's: on a body of another type it refuses as the
 * container does. Asynchronous processing is refused ({@link #startAsync()} throws {@link
 * IllegalStateException}): the filter must have the complete response when the chain returns. One
 * instance serves one request on one thread, as the Servlet specification assumes; not
 * thread-safe.
 */
public final class BufferedRequest extends HttpServletRequestWrapper {

  private static final String FORM = "application/x-www-form-urlencoded";

  /** The body read by the filter; {@code null} when the container parsed it. */
  private final byte @Nullable [] body;
  /** The replay stream, or {@code null} until the application asks for it. */
  private @Nullable ServletInputStream stream;
  /** The replay reader, or {@code null} until the application asks for it. */
  private @Nullable BufferedReader reader;
  /** The form parameters, or {@code null} until first read. */
  private @Nullable Map<String, String[]> formParameters;

  /**
   * @param request the container's request, whose body has been read, never {@code null}
   * @param body the body bytes, never {@code null}; not copied, must not change afterwards
   */
  public BufferedRequest(HttpServletRequest request, byte[] body) {
    super(request);
    this.body = Objects.requireNonNull(body, "body");
  }

  private BufferedRequest(HttpServletRequest request) {
    super(request);
    this.body = null;
  }

  /**
   * @param request the container's request, whose body the container has parsed into parts
   *     ({@link FormParts#read}), never {@code null}
   * @return a request whose body, parts and parameters are the container's
   */
  public static BufferedRequest parsedByContainer(HttpServletRequest request) {
    return new BufferedRequest(request);
  }

  @Override
  public ServletInputStream getInputStream() throws IOException {
    if (body == null) {
      return super.getInputStream();
    }
    if (reader != null) {
      throw new IllegalStateException("getReader() has already been called for this request");
    }
    if (stream == null) {
      stream = new ReplayInputStream(body);
    }
    return stream;
  }

  @Override
  public BufferedReader getReader() throws IOException {
    if (body == null) {
      return super.getReader();
    }
    if (stream != null) {
      throw new IllegalStateException("getInputStream() has already been called for this request");
    }
    if (reader == null) {
      reader = new BufferedReader(new InputStreamReader(new ByteArrayInputStream(body), readerCharset()));
    }
    return reader;
  }

  private Charset readerCharset() throws UnsupportedEncodingException {
    String name = getCharacterEncoding();
    if (name == null) {
      // RFC 8259 section 8.1: JSON exchanged between systems is UTF-8. Otherwise the Servlet
      // specification's default, ISO-8859-1.
      return Fingerprint.isJson(getContentType()) ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1;
    }
    try {
      return Charset.forName(name);
    } catch (IllegalCharsetNameException | UnsupportedCharsetException e) {
      throw new UnsupportedEncodingException(name);
    }
  }

  @Override
  public int getContentLength() {
    return body == null ? super.getContentLength() : body.length;
  }

  @Override
  public long getContentLengthLong() {
    return body == null ? super.getContentLengthLong() : body.length;
  }

  @Override
  public @Nullable String getParameter(String name) {
    if (!isForm()) {
      return super.getParameter(name);
    }
    String[] values = formParameters().get(name);
    return values == null ? null : values[0];
  }

  @Override
  public Map<String, String[]> getParameterMap() {
    return isForm() ? formParameters() : super.getParameterMap();
  }

  @Override
  public Enumeration<String> getParameterNames() {
    return isForm() ? Collections.enumeration(formParameters().keySet()) : super.getParameterNames();
  }

  @Override
  public String @Nullable [] getParameterValues(String name) {
    if (!isForm()) {
      return super.getParameterValues(name);
    }
    String[] values = formParameters().get(name);
    return values == null ? null : values.clone();
  }

  @Override
  public AsyncContext startAsync() {
    throw new IllegalStateException("asynchronous processing is not supported on a route of the idempotency filter");
  }

  @Override
  public AsyncContext startAsync(ServletRequest request, ServletResponse response) {
    throw new IllegalStateException("asynchronous processing is not supported on a route of the idempotency filter");
  }

  @Override
  public boolean isAsyncSupported() {
    return false;
  }

  @Override
  public boolean isAsyncStarted() {
    return false;
  }

  private boolean isForm() {
    if (body == null) {
      return false; // the container's parameters
    }
    String type = getContentType();
    if (type == null) {
      return false;
    }
    int semi = type.indexOf(';');
    return (semi < 0 ? type : type.substring(0, semi)).trim().toLowerCase(Locale.ROOT).equals(FORM);
  }

  /** Query string first, then the body, as the Servlet specification (section 3.1) orders them. */
  private Map<String, String[]> formParameters() {
    Map<String, String[]> parameters = formParameters;
    if (parameters == null) {
      byte[] form = Objects.requireNonNull(body, "isForm() is false without a body");
      Map<String, List<String>> collected = new LinkedHashMap<>();
      parse(getQueryString(), StandardCharsets.UTF_8, collected);
      Charset charset;
      try {
        String name = getCharacterEncoding();
        charset = name == null ? StandardCharsets.UTF_8 : Charset.forName(name);
      } catch (IllegalArgumentException e) {
        charset = StandardCharsets.UTF_8;
      }
      parse(new String(form, StandardCharsets.ISO_8859_1), charset, collected);
      Map<String, String[]> result = new LinkedHashMap<>();
      collected.forEach((k, v) -> result.put(k, v.toArray(new String[0])));
      parameters = Collections.unmodifiableMap(result);
      formParameters = parameters;
    }
    return parameters;
  }

  private static void parse(@Nullable String encoded, Charset charset, Map<String, List<String>> into) {
    if (encoded == null || encoded.isEmpty()) {
      return;
    }
    for (String pair : encoded.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq), charset);
      String value = eq < 0 ? "" : decode(pair.substring(eq + 1), charset);
      into.computeIfAbsent(name, k -> new ArrayList<>(1)).add(value);
    }
  }

  private static String decode(String s, Charset charset) {
    try {
      // The body was turned into a String as ISO-8859-1, one char per byte, so that the
      // percent-decoder sees the raw octets; re-encode non-escaped bytes before decoding.
      return URLDecoder.decode(new String(s.getBytes(StandardCharsets.ISO_8859_1), charset), charset);
    } catch (IllegalArgumentException e) {
      return s; // a malformed escape: keep the text as sent
    }
  }

  /** Replays a byte array. Blocking use only; {@link #setReadListener} needs async mode. */
  private static final class ReplayInputStream extends ServletInputStream {
    private final ByteArrayInputStream in;

    ReplayInputStream(byte[] body) {
      this.in = new ByteArrayInputStream(body);
    }

    @Override
    public int read() {
      return in.read();
    }

    @Override
    public int read(byte[] b, int off, int len) {
      return in.read(b, off, len);
    }

    @Override
    public int available() {
      return in.available();
    }

    @Override
    public boolean isFinished() {
      return in.available() == 0;
    }

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public void setReadListener(ReadListener readListener) {
      throw new IllegalStateException("non-blocking reads need asynchronous processing, which the idempotency filter does not support");
    }
  }
}
