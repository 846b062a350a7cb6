package dev.idem.servlet;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InvalidPayloadException;
import dev.idem.core.Scope;
import dev.idem.servlet.internal.BufferedRequest;
import dev.idem.servlet.internal.FormParts;
import dev.idem.core.http.KeyHeader;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Enumeration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The reading half of {@link IdempotencyFilter}: from a request to what the engine runs (its
 * route, key, body and fingerprint, as {@link IdempotencyFilter} describes them), or to the problem
 * that answers it instead. Stateless.
 */
final class RequestReader {

  /** How much of an unread body is read and dropped before an answer given without it (a 413, a 400). */
  static final int SWALLOW_BYTES = 64 * 1024;

  /**
   * How long (nanoseconds, 2 s) the body is read and dropped at most, checked between reads: a
   * client that sends its body a few bytes at a time would otherwise hold the request thread for
   * up to {@link #SWALLOW_BYTES} reads of the container's idle timeout each. A body not ended by
   * then closes the connection; one read that waits is still bounded by the idle timeout.
   */
  static final long SWALLOW_NANOS = TimeUnit.SECONDS.toNanos(2);

  private RequestReader() {}

  /** What the filter does with a request, as {@link #read} found it. */
  sealed interface Reading permits Pass, Refusal, Protected {}

  /** No route, or no key on an optional route: the request passes through untouched. */
  record Pass() implements Reading {}

  /**
   * A request refused before the engine: the problem to answer.
   *
   * @param problem the answer
   * @param reason what the configuration's listener is told ({@code "key-missing"} and so on), or
   *     {@code null} when it is not told (the store failed while looking under earlier names)
   * @param route the route that matched, whose operation the listener is told
   * @param path the request's path inside the context ({@link Operations#path})
   * @param unreadBody whether the body may still be unread, so that the answer first drops it
   *     ({@link #dropUnreadBody})
   */
  record Refusal(IdemProblem problem, @Nullable String reason, IdempotencyFilterConfig.Route route, String path,
      boolean unreadBody) implements Reading {}

  /**
   * A request the engine runs.
   *
   * @param request its scope, key and fingerprint
   * @param route the route whose engine answers it: the matching one, or the one an earlier
   *     version stored its key under
   * @param body the request as the handler reads it, its body buffered or parsed
   */
  record Protected(IdempotentRequest request, IdempotencyFilterConfig.Route route, BufferedRequest body) implements Reading {}

  /**
   * Reads one request. On a keyed request of a route it also marks the request as the filter's
   * (attributes {@link IdempotencyFilter#APPLIED} and {@link IdempotencyFilter#KEY_ATTRIBUTE},
   * and {@link IdempotencyFilter#REQUEST_ATTRIBUTE} once protected) and echoes the key on the
   * response, so that every answer to it carries the field, refusals included.
   *
   * @throws IOException if reading the body fails
   * @throws RuntimeException of the {@link dev.idem.core.spi.PrincipalResolver}, or a container that refuses the
   *     body's stream of a request that is not a form
   */
  static Reading read(IdempotencyFilterConfig cfg, HttpServletRequest req, HttpServletResponse res) throws IOException {
    String path = Operations.path(req);
    IdempotencyFilterConfig.Route route = cfg.routeFor(req.getMethod(), path);
    if (route == null) {
      return new Pass();
    }
    KeyHeader.Result key = KeyHeader.parse(req.getHeaders(IdempotencyFilter.KEY_HEADER));
    if (key.absent()) {
      if (route.requirement() == KeyRequirement.REQUIRED) {
        return refusal(route, path, "key-missing", cfg.problems().keyMissing(route.operation()));
      }
      return new Pass();
    }
    if (key.problem() != null) {
      return refusal(route, path, "key-malformed", cfg.problems().keyMalformed(key.problem()));
    }
    // neither absent nor malformed: well-formed, so the field has a key
    IdempotencyKey idempotencyKey = Objects.requireNonNull(key.key(), "key");
    // Every answer to a keyed request, replays and refusals included, carries the key back as the
    // client sent it; the handler's own field of that name and stored ones are never sent.
    res.setHeader(IdempotencyFilter.KEY_HEADER, key.fieldValue());
    req.setAttribute(IdempotencyFilter.APPLIED, Boolean.TRUE); // forwards and error dispatches of this request pass through
    req.setAttribute(IdempotencyFilter.KEY_ATTRIBUTE, idempotencyKey);

    int max = cfg.maxBodyBytes();
    long declared = req.getContentLengthLong();
    if (declared > max) {
      return tooLarge(cfg, route, path,
          "the request announces a body of " + declared + " bytes (Content-Length); at most " + max + " bytes are accepted");
    }
    BufferedRequest buffered = null;
    Fingerprint payload = null; // the digest of a body the container parsed
    byte[] rawBody = null; // or the body's bytes
    if (FormParts.isFormData(req.getContentType())) {
      // Parsed by the container with the servlet's multipart configuration, so that getParts()
      // works behind the filter; fingerprinted by its parts, whatever the boundary.
      FormParts parts;
      try {
        parts = FormParts.read(req);
      } catch (FormParts.Unreadable e) {
        if (e.tooLarge()) {
          return tooLarge(cfg, route, path, "the multipart/form-data body is over a limit of the server: " + e.getMessage());
        }
        return refusal(route, path, "payload-invalid", cfg.problems().payloadInvalid(
            "the body is declared as " + req.getContentType() + " but cannot be read: " + e.getMessage()));
      }
      if (parts != null) {
        if (parts.bytes() > max) {
          return tooLarge(cfg, route, path,
              "the parts of the request body add up to " + parts.bytes() + " bytes; at most " + max + " bytes are accepted");
        }
        buffered = BufferedRequest.parsedByContainer(req);
        payload = Fingerprint.fromHex(parts.hex());
      }
      // else: the servlet has no multipart configuration; its handler reads the bytes itself
    }
    if (buffered == null) {
      boolean form = FormParts.isUrlEncodedForm(req.getContentType());
      byte[] body;
      try {
        body = readBody(req, max);
      } catch (IllegalStateException spent) {
        if (!form) {
          throw spent;
        }
        body = new byte[0]; // a container that refuses the stream once it parsed the form
      }
      if (body == null) {
        return tooLarge(cfg, route, path, "the request body is longer than " + max + " bytes, the most accepted");
      }
      if (form && body.length == 0 && req.getContentLengthLong() != 0) {
        // An earlier filter read a parameter (a CSRF check, a hidden-method filter), so the
        // container had consumed the form before this filter: its fields stay the container's,
        // and they are what is fingerprinted (with a truly empty body, they are the query's).
        FormParts fields = FormParts.ofParameters(req);
        if (fields.bytes() > max) {
          return tooLarge(cfg, route, path,
              "the form's fields add up to " + fields.bytes() + " bytes; at most " + max + " bytes are accepted");
        }
        buffered = BufferedRequest.parsedByContainer(req);
        payload = Fingerprint.fromHex(fields.hex());
      } else {
        rawBody = body;
        buffered = new BufferedRequest(req, body);
      }
    }
    Fingerprint fingerprint;
    try {
      fingerprint = fingerprint(req, rawBody, payload);
    } catch (InvalidPayloadException e) {
      return refusal(route, path, "payload-invalid", cfg.problems().payloadInvalid(
          "the body is declared as " + req.getContentType() + " but is not valid: " + e.getMessage()));
    }
    String principal = Scope.principalPart(cfg.principalResolver().resolve(req), cfg.anonymousPrincipal());
    IdempotentRequest idempotent = new IdempotentRequest(
        Scope.of(principal, Operations.operation(cfg, req.getMethod(), path, req.getContextPath(), route)), idempotencyKey, fingerprint);
    IdempotencyFilterConfig.Route answering = route;
    // Named after the handler now; a key stored under a route's name (before the change) is
    // answered there, by that route's engine, never run again under the new name.
    Operations.Earlier earlier;
    try {
      earlier = Operations.earlierRecord(cfg, req.getMethod(), path, req.getContextPath(), principal, idempotencyKey,
          idempotent.scope().operation());
    } catch (RuntimeException e) {
      return new Refusal(cfg.problems().storeUnavailable(), null, route, path, false);
    }
    if (earlier != null) {
      idempotent = new IdempotentRequest(earlier.scope(), idempotencyKey, fingerprint);
      answering = earlier.route();
    }
    req.setAttribute(IdempotencyFilter.REQUEST_ATTRIBUTE, idempotent);
    return new Protected(idempotent, answering, buffered);
  }

  private static Refusal refusal(IdempotencyFilterConfig.Route route, String path, String reason, IdemProblem problem) {
    return new Refusal(problem, reason, route, path, true);
  }

  private static Refusal tooLarge(IdempotencyFilterConfig cfg, IdempotencyFilterConfig.Route route, String path, String detail) {
    return new Refusal(cfg.problems().bodyTooLarge(detail), "body-too-large", route, path, true);
  }

  /**
   * Makes an answer given without the request body safe for the connection it is sent on: reads
   * and drops up to {@link #SWALLOW_BYTES} of what is left of the body, for at most {@link
   * #SWALLOW_NANOS}, and when more is left (or the body cannot be read to its end in that time)
   * asks for the connection to be closed after the answer ({@code Connection: close}, RFC 9112
   * section 9.6).
   *
   * <p>A server that answers before a body has arrived and then closes the connection without
   * saying so (as Jetty 12 does when the rest is not already in its buffer) leaves a client that
   * keeps connections alive to send its next request on a closed connection; and one that closes
   * with request bytes unread makes its TCP stack send a reset, so a client that is still sending
   * loses the answer. Tomcat reads a refused body the same way ({@code maxSwallowSize}). A request
   * that sent {@code Expect: 100-continue} is not read (reading would ask the client for the body
   * the answer refuses); its connection is closed instead.
   *
   * @param req the request, never {@code null}
   * @param res the uncommitted response, never {@code null}
   */
  static void dropUnreadBody(HttpServletRequest req, HttpServletResponse res) {
    if (req.getContentLengthLong() == 0) {
      return; // no body: nothing can be left on the connection
    }
    String expect = req.getHeader("Expect");
    if (expect != null && expect.trim().equalsIgnoreCase("100-continue")) {
      res.setHeader("Connection", "close");
      return;
    }
    if (!swallow(req)) {
      res.setHeader("Connection", "close");
    }
  }

  /**
   * Reads and drops up to {@link #SWALLOW_BYTES} of what is left of a body, and one byte more to
   * tell whether the body ended.
   *
   * @return whether the body was read to its end (or had been: a parsed form, a spent stream)
   */
  private static boolean swallow(HttpServletRequest req) {
    InputStream in;
    try {
      in = req.getInputStream();
    } catch (IllegalStateException | UnsupportedOperationException spent) {
      return true; // the container parsed the body (a form, multipart) or a reader took it: it is read
    } catch (IOException gone) {
      return false;
    }
    try {
      byte[] drop = new byte[8192];
      long left = SWALLOW_BYTES;
      long start = System.nanoTime();
      while (left > 0) {
        if (System.nanoTime() - start > SWALLOW_NANOS) {
          return false; // a body sent too slowly: the connection is closed rather than the thread held
        }
        int n = in.read(drop, 0, (int) Math.min(drop.length, left));
        if (n < 0) {
          return true;
        }
        left -= n;
      }
      return in.read() < 0;
    } catch (IOException | IllegalStateException | UnsupportedOperationException gone) {
      return false; // the client went away, or the stream cannot be read: do not reuse the connection
    }
  }

  /**
   * Reads at most {@code max} bytes of the body, and one more to tell whether there is more.
   *
   * @return the body, or {@code null} when it is longer than {@code max}
   */
  private static byte @Nullable [] readBody(HttpServletRequest req, int max) throws IOException {
    long declared = req.getContentLengthLong();
    ByteArrayOutputStream out = new ByteArrayOutputStream(declared > 0 ? (int) declared : 1024);
    InputStream in = req.getInputStream();
    byte[] buffer = new byte[8192];
    long total = 0;
    while (true) {
      int want = (int) Math.min(buffer.length, max + 1L - total);
      int n = in.read(buffer, 0, want);
      if (n < 0) {
        return out.toByteArray();
      }
      total += n;
      if (total > max) {
        return null;
      }
      out.write(buffer, 0, n);
    }
  }

  /**
   * The request's fingerprint: method, request target as sent, media type, content coding and
   * body, as {@link Fingerprint.RequestBuilder} normalises them. The raw request URI, not the
   * decoded path: {@code /a%2Fb} and {@code /a/b}, or a {@code %3F} in the path and a real query,
   * must not look alike. Exactly one of {@code body} (bytes read) and {@code parsedBody} (digest of
   * a body the container parsed) is not {@code null}.
   */
  private static Fingerprint fingerprint(HttpServletRequest req, byte @Nullable [] body, @Nullable Fingerprint parsedBody) {
    String query = req.getQueryString();
    Fingerprint.RequestBuilder request = Fingerprint.request()
        .method(req.getMethod())
        .target(req.getRequestURI() + (query == null ? "" : "?" + query))
        .contentType(parsedBody != null ? withoutBoundary(req.getContentType()) : req.getContentType())
        .contentEncoding(joined(req.getHeaders("Content-Encoding")));
    return (parsedBody != null ? request.parsedBody(parsedBody) : request.body(Objects.requireNonNull(body, "body"))).build();
  }

  /**
   * A multipart media type without its {@code boundary} parameter, which clients choose anew for
   * each attempt (RFC 2046 section 5.1.1) and which says nothing once the container parsed the parts;
   * a boundary never contains {@code ;}. {@code null} stays {@code null}.
   */
  static @Nullable String withoutBoundary(@Nullable String contentType) {
    if (contentType == null || contentType.indexOf(';') < 0) {
      return contentType;
    }
    StringBuilder kept = new StringBuilder();
    for (String part : contentType.split(";")) {
      String name = part.strip();
      int eq = name.indexOf('=');
      if (kept.length() > 0 && eq > 0 && name.substring(0, eq).strip().equalsIgnoreCase("boundary")) {
        continue;
      }
      if (kept.length() > 0) {
        kept.append(';');
      }
      kept.append(part);
    }
    return kept.toString();
  }

  /** Several fields of one name as one comma-separated list (RFC 9110 section 5.3); null if none. */
  private static @Nullable String joined(@Nullable Enumeration<String> fields) {
    if (fields == null || !fields.hasMoreElements()) {
      return null;
    }
    StringBuilder sb = new StringBuilder(fields.nextElement());
    while (fields.hasMoreElements()) {
      sb.append(',').append(fields.nextElement());
    }
    return sb.toString();
  }
}
