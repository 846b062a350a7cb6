package dev.idem.servlet;

import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InvalidPayloadException;
import dev.idem.core.LeaseContext;
import dev.idem.core.KeyStatus;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.servlet.internal.BufferedRequest;
import dev.idem.servlet.internal.CapturingResponse;
import dev.idem.servlet.internal.FormParts;
import dev.idem.servlet.internal.HeaderRules;
import dev.idem.servlet.internal.KeyHeader;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A Jakarta Servlet 6 filter that implements the {@code Idempotency-Key} HTTP request header field
 * (IETF draft-ietf-httpapi-idempotency-key-header) on an {@link IdempotencyEngine}: the rest of the
 * filter chain, the handler, is the effect that runs at most once per key. Either mode works in any
 * servlet container: lease mode ({@link LeaseIdempotency}, the handler may call anything) or
 * transactional mode ({@code dev.idem.jdbc.TransactionalIdempotency} from idem-jdbc, the claim, the
 * handler's writes and the stored response in one transaction of its database; the handler finds
 * the transaction's connection in the request attribute {@value #CONNECTION_ATTRIBUTE}). The filter
 * turns the engine's {@link AttemptResult} into the answer below.
 *
 * <h2>What happens to a request</h2>
 *
 * <ol>
 *   <li>A request whose method and path match no {@link IdempotencyFilterConfig.Route} passes
 *       through untouched (by default only {@code POST} and {@code PATCH} match).
 *   <li>The key comes from the {@value #KEY_HEADER} field (name matched case-insensitively, RFC
 *       9110 section 5.1), either as the draft's {@code sf-string} ({@code "8e03978e-..."}, section
 *       2.1, RFC 8941 section 3.3.3, with {@code \"} and {@code \\} escapes) or as a bare value
 *       ({@code 8e03978e-...}); both spell the same key. Missing on a {@link
 *       KeyRequirement#REQUIRED} route: 400. Missing on an {@link KeyRequirement#OPTIONAL} route:
 *       the request runs normally and is never deduplicated. Malformed (empty, longer than 255
 *       characters, a control or non-ASCII character, bad quoting, or the field twice): 400.
 *   <li>The body stays readable by the handler as without the filter, and is limited to {@link
 *       IdempotencyFilterConfig#maxBodyBytes()} bytes (a longer one, or a {@code Content-Length}
 *       announcing one, gets 413 without the handler running):
 *       <ul>
 *         <li>{@code multipart/form-data}, when the servlet has a multipart configuration ({@code
 *             @MultipartConfig}): the container parses it with that configuration before the
 *             handler runs, and the handler gets the container's {@code getParts()}, {@code
 *             getPart(name)} and field parameters. The parts' sizes count against the limit; a body
 *             the container refuses gets 400 (malformed) or 413 (over one of its limits).
 *         <li>any other body (JSON, {@code application/x-www-form-urlencoded}, binary, and
 *             multipart for a servlet without a multipart configuration) is read into memory, never
 *             more than the limit even when chunked, and the handler reads the same bytes again
 *             through {@code getInputStream()}, {@code getReader()} or the form parameters.
 *         <li>a form whose fields an earlier filter already read (so the container consumed its
 *             bytes): the handler gets the container's parameters.
 *       </ul>
 *   <li>The fingerprint (draft section 2.4) is {@link Fingerprint#request()} of the method, the
 *       request target as sent (raw path and query, not decoded), the {@code Content-Type}
 *       (normalised: {@code Application/JSON; charset=UTF-8} is {@code application/json}, but
 *       {@code text/plain} and a missing {@code Content-Type} are other media types), the {@code
 *       Content-Encoding}, and the body: canonical JSON for a JSON media type (member order,
 *       whitespace, escapes and number spelling do not matter; number values do, exactly), for
 *       {@code application/x-www-form-urlencoded} its decoded fields sorted by name, fields of one
 *       name in the order sent ({@link Fingerprint}, "Form payloads"), raw bytes otherwise. A body the container parsed counts by its parsed form ({@link
 *       Fingerprint.RequestBuilder#parsedBody}): multipart by each part's name, file name, content
 *       type and content in order, but not the boundary, which clients choose anew for each
 *       attempt; a form parsed earlier by its fields with their values in order. So the same bytes
 *       sent as {@code application/json} and then as {@code text/plain} with one key are a reuse
 *       with another request (422) however they are spaced, and so is a key reused on another
 *       resource under a wildcard route ({@code PATCH /notes/1}, then {@code /notes/2}): never a
 *       replay of another request's answer. Other header fields are not part of it, nor is the
 *       principal, which is part of the scope. A non-empty body declared as JSON that is not JSON
 *       gets 400; an empty body is never parsed.
 *   <li>The scope is the principal (from the {@link PrincipalResolver}, by default {@code
 *       getUserPrincipal()}, or the anonymous principal) and the route's operation, {@code "<METHOD>
 *       <pattern>"}: the configured template, never the raw URI (draft, Security Considerations:
 *       a composite key with attributes known only to the server). Outside the root context the
 *       context path precedes the pattern ({@code "POST /shop/notes"}), so that applications
 *       sharing one store never share a scope.
 *   <li>The engine claims the key. Then, for a first attempt, the handler runs against a response
 *       that is buffered entirely ({@code getWriter}, {@code getOutputStream}, {@code sendError},
 *       {@code sendRedirect}, {@code setStatus}, headers, cookies, {@code flushBuffer}: nothing
 *       reaches the client before the handler returns), up to {@link
 *       IdempotencyFilterConfig#maxResponseBytes()} bytes of body. The engine's {@link
 *       dev.idem.core.ResponsePolicy} then stores the answer or releases the claim (5xx, 408, 425,
 *       429 are released by default, so a retry runs again), and the filter writes the handler's
 *       answer, every header and cookie included. The handler finds the claim's {@link
 *       LeaseContext} in the request attribute {@value #LEASE_CONTEXT_ATTRIBUTE} and should pass
 *       {@code key()} downstream when {@code recovery()} is {@code true}.
 *   <li>A body that grows past {@link IdempotencyFilterConfig#maxResponseBytes()} stops the
 *       buffering: status, header fields, cookies and the bytes buffered so far go to the client at
 *       that moment, and the rest of the body (and every later flush) streams straight through, so
 *       the client still receives the whole answer while the filter holds at most the limit. Such
 *       an answer is not stored, but its key is not freed either: the engine completes the claim
 *       with a record of the answer without its body (its status, the replayed header fields and
 *       the body's length: {@link StoredResponse.Builder#bodyNotStored(long)}), deciding by its
 *       {@link dev.idem.core.ResponsePolicy} on that status as for a short answer, and a warning
 *       (without the key) is logged. A retry then gets the problem {@value
 *       #PROBLEM_RESPONSE_TOO_LARGE} (422) instead of a second run. The same holds when the handler
 *       throws, or the client goes away, after part of the answer has been sent: the client has
 *       seen the status, so the key stays completed and the exception still reaches the container,
 *       which aborts the half-sent answer.
 *   <li>A retry after completion gets the stored status, body bytes and the configured header
 *       fields ({@link IdempotencyFilterConfig#replayedHeaders()}), plus {@code Idempotent-Replayed:
 *       true}; never {@code Set-Cookie}, credentials or hop-by-hop fields.
 * </ol>
 *
 * <p>Every answer to a request with a well-formed key (the handler's, a replay, and each problem
 * below from 409, 413 and 422 to 503) carries the {@value #KEY_HEADER} field back exactly as the
 * request's field value was sent (quoted or bare), as Stripe and Adyen do and their clients read.
 * It comes from the request being answered, never from what was stored, and a field of that name
 * set by the handler is dropped, so the answer carries it once. A missing or malformed key is not
 * echoed.
 *
 * <h2>Errors</h2>
 *
 * <p>Every error the filter produces itself is an RFC 9457 problem ({@code application/problem+json}
 * with {@code type}, {@code title}, {@code status} and {@code detail}; never a stack trace). The
 * types below are those under the default base {@value #PROBLEM_TYPE_BASE}; {@link
 * IdempotencyFilterConfig.Builder#problemTypeBase(java.net.URI)} puts the same names under another
 * base, and {@link IdempotencyFilterConfig.Builder#aboutBlankProblemTypes()} leaves {@code type}
 * out (RFC 9457 section 3.1.1: {@code about:blank}) with the status code's reason phrase as {@code
 * title}:
 *
 * <table>
 *   <caption>Problems</caption>
 *   <tr><th>status</th><th>type</th><th>when</th><th>rule</th></tr>
 *   <tr><td>400</td><td>{@value #PROBLEM_KEY_MISSING}</td><td>required key missing</td><td>draft 2.7</td></tr>
 *   <tr><td>400</td><td>{@value #PROBLEM_KEY_MALFORMED}</td><td>malformed key</td><td>draft 2.1, 2.7</td></tr>
 *   <tr><td>400</td><td>{@value #PROBLEM_PAYLOAD_INVALID}</td><td>body declared JSON is not JSON</td><td>RFC 8259</td></tr>
 *   <tr><td>409</td><td>{@value #PROBLEM_IN_PROGRESS}</td><td>the first attempt is still running;
 *       with {@code Retry-After} in whole seconds: the time left on its lease, at least 1 and at
 *       most {@link IdempotencyFilterConfig#maxRetryAfter()} (default 1 s; see {@link
 *       IdempotencyFilterConfig#retryAfterSeconds})</td><td>draft 2.6, 2.7; RFC 9110 10.2.3</td></tr>
 *   <tr><td>413</td><td>{@value #PROBLEM_BODY_TOO_LARGE}</td><td>body over the limit</td><td>RFC 9110 15.5.14</td></tr>
 *   <tr><td>422</td><td>{@value #PROBLEM_KEY_REUSED}</td><td>key reused with another request</td><td>draft 2.2, 2.7</td></tr>
 *   <tr><td>500</td><td>{@value #PROBLEM_REQUEST_FAILED}</td><td>transactional engine: the
 *       request's transaction was rolled back by a failure of the request itself (the database
 *       refused its data at commit, or the handler answered success after an SQL error that
 *       aborted its transaction); nothing was kept or stored, and a retry would fail the same
 *       way</td><td>RFC 9110 15.6.1</td></tr>
 *   <tr><td>422</td><td>{@value #PROBLEM_RESPONSE_TOO_LARGE}</td><td>a retry of a request that ran
 *       and was answered with a body longer than {@link IdempotencyFilterConfig#maxResponseBytes()}:
 *       the operation is not run again and its answer cannot be sent again. Extension members
 *       {@code originalStatus}, {@code originalBodyBytes} and, when the answer had one, {@code
 *       originalLocation}. A 5xx because the client did nothing wrong and the server cannot do what
 *       a retry asks; not 502/503/504, which clients retry, since no retry can succeed</td><td>RFC
 *       9110 15.6.1; RFC 9457 3.2</td></tr>
 *   <tr><td>500</td><td>{@value #PROBLEM_STORED_RESPONSE_UNREADABLE}</td><td>the key is answered,
 *       but its stored response cannot be read ({@link dev.idem.core.StoredResponseUnreadableException}:
 *       it fails authentication under {@link dev.idem.core.ResponseProtection}, its key id is not in
 *       the keyring, or it is corrupt). Nothing is replayed and nothing runs again; a 5xx that
 *       clients do not retry, since no retry succeeds until an operator acts</td><td>RFC 9110
 *       15.6.1</td></tr>
 *   <tr><td>503</td><td>{@value #PROBLEM_STORE_UNAVAILABLE}</td><td>the store failed before the
 *       claim was made, so the handler did not run and nothing was written; or, in a
 *       transactional engine, the handler's transaction did not commit for a transient reason, so
 *       nothing was kept</td><td>RFC 9110 15.6.4</td></tr>
 *   <tr><td>503</td><td>{@value #PROBLEM_OUTCOME_UNKNOWN}</td><td>the handler ran and whether its
 *       answer was recorded is not known: in lease mode its answer could not be stored within the
 *       lease ({@link dev.idem.core.OutcomeUnknownException}) or the lease was taken over before
 *       it was; in a transactional engine the commit's acknowledgement was lost. With {@code
 *       Retry-After} in seconds. A retry with the same key is safe: it gets the stored answer, or
 *       runs (transactional) or resumes as a recovery (lease) the same operation once</td><td>RFC
 *       9110 15.6.4, 10.2.3</td></tr>
 * </table>
 *
 * <p>A handler that throws while its answer is still held (nothing has reached the client) releases
 * the claim (so a retry runs again, contract rule 6) and nothing is stored; the exception propagates
 * to the container, which answers as it answers any failing servlet. One that throws after part of
 * an answer longer than the limit was sent leaves the key completed, as described above. If the
 * store fails <em>after</em> the handler ran, the engine completes again with the same owner token
 * for as long as the lease lasts, so the answer sent is the one every retry will replay. When no
 * completion succeeds, the handler's answer is <em>not</em> sent (a later retry could contradict
 * it): the client gets the 503 outcome-unknown problem above, and its retry with the same key
 * after the lease takes the claim over with {@link LeaseContext#recovery()} {@code true}, where the
 * handler must find what its first run did (see {@link #LEASE_CONTEXT_ATTRIBUTE}). An answer longer
 * than the limit has already streamed to the client by then and cannot be withdrawn; the failure is
 * logged. A release that fails after an answer the response policy does not store (a 5xx) still
 * sends that answer; the claim then expires with its lease.
 *
 * <h2>Limits</h2>
 *
 * <p>On a matched route the request body (at most {@link IdempotencyFilterConfig#maxBodyBytes()}
 * bytes) and the response body (at most {@link IdempotencyFilterConfig#maxResponseBytes()} bytes)
 * are held in memory, so the routes should be API operations with bounded answers; an answer over
 * the response limit is sent and runs once, but a retry cannot get it back. Multipart parts stay
 * where the container puts them (memory or temporary files, per the servlet's configuration).
 * Asynchronous processing ({@code startAsync}) is refused there. The filter is thread-safe: its configuration is
 * immutable, and each request's state lives on its own thread.
 */
public final class IdempotencyFilter implements Filter {

  /** {@link IdempotencyHeaders#KEY}: the request header field that carries the key (draft section 2). */
  public static final String KEY_HEADER = IdempotencyHeaders.KEY;

  /** {@link IdempotencyHeaders#REPLAYED}: the response header field, with value {@code true}, that marks a replayed answer. */
  public static final String REPLAYED_HEADER = IdempotencyHeaders.REPLAYED;

  /**
   * The request attribute that holds the claim's {@link LeaseContext} while the handler runs
   * (scope, key, owner token, and whether this run takes over an expired lease).
   */
  public static final String LEASE_CONTEXT_ATTRIBUTE = "dev.idem.core.LeaseContext";

  /**
   * The request attribute that holds, in transactional mode, the {@link Connection} of the
   * transaction the handler runs in: what the handler writes on it commits or rolls back with the
   * key's record and the stored response. The handler must not commit, roll back or close it.
   */
  public static final String CONNECTION_ATTRIBUTE = "dev.idem.servlet.Connection";

  /**
   * The default base of the problem type URIs below ({@link
   * IdempotencyFilterConfig#DEFAULT_PROBLEM_TYPE_BASE}). The {@code PROBLEM_*} constants are the
   * type URIs under this default; a configuration with another {@link
   * IdempotencyFilterConfig.Builder#problemTypeBase(java.net.URI) problemTypeBase} keeps their last
   * segment and replaces this base, and one with {@link
   * IdempotencyFilterConfig.Builder#aboutBlankProblemTypes() aboutBlankProblemTypes()} leaves the
   * {@code type} member out.
   *
   * <p>The default is a URN, {@code urn:idem:problem:}, not an {@code https:} locator: an identifier
   * that names no host, so it can never point at a domain the project does not own, and that stays
   * the same across versions (RFC 9457 section 3.1.1 does not require type URIs to be
   * dereferenceable, and tells consumers not to dereference them automatically). Applications that
   * publish documentation for these problems set a locator base under their own domain.
   */
  public static final String PROBLEM_TYPE_BASE = "urn:idem:problem:";


  /** Problem type under the default base: a required {@code Idempotency-Key} is missing (400). */
  public static final String PROBLEM_KEY_MISSING = PROBLEM_TYPE_BASE + IdemProblems.KEY_MISSING;
  /** Problem type under the default base: the {@code Idempotency-Key} field is malformed (400). */
  public static final String PROBLEM_KEY_MALFORMED = PROBLEM_TYPE_BASE + IdemProblems.KEY_MALFORMED;
  /**
   * Problem type under the default base: the body does not match its declared media type, such as
   * invalid JSON (400).
   */
  public static final String PROBLEM_PAYLOAD_INVALID = PROBLEM_TYPE_BASE + IdemProblems.PAYLOAD_INVALID;
  /**
   * Problem type under the default base: the first request with this key is still being processed
   * (409).
   */
  public static final String PROBLEM_IN_PROGRESS = PROBLEM_TYPE_BASE + IdemProblems.IN_PROGRESS;
  /**
   * Problem type under the default base: the request body is larger than the configured limit
   * (413).
   */
  public static final String PROBLEM_BODY_TOO_LARGE = PROBLEM_TYPE_BASE + IdemProblems.BODY_TOO_LARGE;
  /** Problem type under the default base: the key was already used with another request (422). */
  public static final String PROBLEM_KEY_REUSED = PROBLEM_TYPE_BASE + IdemProblems.KEY_REUSED;
  /** Problem type under the default base: the idempotency store could not be used (503). */
  public static final String PROBLEM_STORE_UNAVAILABLE = PROBLEM_TYPE_BASE + IdemProblems.STORE_UNAVAILABLE;
  /**
   * Problem type under the default base: the request with this key already ran, but its answer was
   * longer than {@link IdempotencyFilterConfig#maxResponseBytes()} and was not stored, so it cannot
   * be replayed; the operation is not run again (500).
   */
  public static final String PROBLEM_RESPONSE_TOO_LARGE = PROBLEM_TYPE_BASE + IdemProblems.RESPONSE_TOO_LARGE;
  /**
   * Problem type under the default base: the handler ran but its answer could not be stored, so the
   * outcome is unknown to the client; a retry with the same key is safe (503, with {@code
   * Retry-After}).
   */
  public static final String PROBLEM_OUTCOME_UNKNOWN = PROBLEM_TYPE_BASE + IdemProblems.OUTCOME_UNKNOWN;
  /**
   * Problem type under the default base: in a transactional engine, the request's transaction was
   * rolled back by a failure of the request itself, which a retry would repeat (500).
   */
  public static final String PROBLEM_REQUEST_FAILED = PROBLEM_TYPE_BASE + IdemProblems.REQUEST_FAILED;
  /**
   * Problem type under the default base: the request with this key was answered, but its stored
   * response cannot be read (protection at rest refused it, or it is corrupt); nothing is replayed
   * and the operation is not run again (500).
   */
  public static final String PROBLEM_STORED_RESPONSE_UNREADABLE = PROBLEM_TYPE_BASE + IdemProblems.STORED_RESPONSE_UNREADABLE;

  private static final System.Logger LOG = System.getLogger(IdempotencyFilter.class.getName());
  private static final String APPLIED = IdempotencyFilter.class.getName() + ".applied";
  private static final String KEY_ATTRIBUTE = IdempotencyFilter.class.getName() + ".key";
  private static final String REQUEST_ATTRIBUTE = IdempotencyFilter.class.getName() + ".request";

  /**
   * The key of the request the filter protects, for code the handler calls (the Spring starter's
   * {@code @Idempotent} methods: a method called with the request's own key is covered by the
   * request's record and records none of its own).
   *
   * @param request the request, never {@code null}
   * @return the request's idempotency key when a route of this filter protects it with a key, else
   *     empty (no route, no key, or a request the filter did not see)
   * @throws NullPointerException if {@code request} is {@code null}
   */
  public static java.util.Optional<dev.idem.core.IdempotencyKey> protectedKey(ServletRequest request) {
    Object key = Objects.requireNonNull(request, "request").getAttribute(KEY_ATTRIBUTE);
    return key instanceof dev.idem.core.IdempotencyKey k ? java.util.Optional.of(k) : java.util.Optional.empty();
  }

  /**
   * The operation the filter runs for the request, for code the handler calls that names things
   * after it as Idem does (the Spring starter's outbox derives its intents' ids from its scope and
   * key): the scope's principal and operation exactly as the filter built them and stored them
   * with the key.
   *
   * @param request the request, never {@code null}
   * @return the request's {@link IdempotentRequest} (scope, key and fingerprint) once the filter
   *     has claimed or is about to claim its key on a protected route, else empty (no route, no
   *     key, a refused request, or a request the filter did not see)
   * @throws NullPointerException if {@code request} is {@code null}
   */
  public static java.util.Optional<IdempotentRequest> protectedRequest(ServletRequest request) {
    Object value = Objects.requireNonNull(request, "request").getAttribute(REQUEST_ATTRIBUTE);
    return value instanceof IdempotentRequest r ? java.util.Optional.of(r) : java.util.Optional.empty();
  }

  private volatile IdempotencyFilterConfig config;

  /**
   * A filter with its configuration, for programmatic registration ({@code
   * ServletContext.addFilter(name, filter)}).
   *
   * @param config the configuration, never {@code null}
   * @throws NullPointerException if {@code config} is {@code null}
   */
  public IdempotencyFilter(IdempotencyFilterConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /**
   * A filter for containers that instantiate it by class name ({@code web.xml}, {@code
   * @WebFilter}): {@link #init(FilterConfig)} takes the configuration from the servlet context
   * attribute {@link IdempotencyFilterConfig#CONTEXT_ATTRIBUTE}, which the application sets first
   * (for example in a {@code ServletContextListener}).
   */
  public IdempotencyFilter() {}

  /**
   * Takes the configuration from the servlet context when none was given to the constructor.
   *
   * @param filterConfig the container's filter configuration, never {@code null}
   * @throws ServletException if no configuration was given and the context attribute {@link
   *     IdempotencyFilterConfig#CONTEXT_ATTRIBUTE} does not hold an {@link IdempotencyFilterConfig}
   */
  @Override
  public void init(FilterConfig filterConfig) throws ServletException {
    if (config != null) {
      return;
    }
    Object attribute = filterConfig.getServletContext().getAttribute(IdempotencyFilterConfig.CONTEXT_ATTRIBUTE);
    if (!(attribute instanceof IdempotencyFilterConfig)) {
      throw new ServletException("IdempotencyFilter has no configuration: pass one to its constructor or set the servlet context attribute "
          + IdempotencyFilterConfig.CONTEXT_ATTRIBUTE + " to an IdempotencyFilterConfig before the filter starts");
    }
    config = (IdempotencyFilterConfig) attribute;
  }

  /**
   * Applies the rules described on the class to one request. Safe to call from many threads at
   * once.
   *
   * @param request the request; anything but an {@link HttpServletRequest} passes through
   * @param response the response; anything but an {@link HttpServletResponse} passes through
   * @param chain the rest of the chain, run at most once
   * @throws IOException from the chain or from writing the response, as is
   * @throws ServletException from the chain, as is; or if the filter was never configured
   * @throws RuntimeException any unchecked exception of the chain, as is (the claim was released),
   *     or of the {@link PrincipalResolver}
   */
  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
      throws IOException, ServletException {
    IdempotencyFilterConfig cfg = config;
    if (cfg == null) {
      throw new ServletException("IdempotencyFilter was not initialised with a configuration");
    }
    if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse res)
        || request.getAttribute(APPLIED) != null) {
      chain.doFilter(request, response);
      return;
    }
    String path = path(req);
    IdempotencyFilterConfig.Route route = cfg.routeFor(req.getMethod(), path);
    if (route == null) {
      chain.doFilter(request, response);
      return;
    }
    KeyHeader.Result key = KeyHeader.parse(req.getHeaders(KEY_HEADER));
    if (key.absent()) {
      if (route.requirement() == KeyRequirement.REQUIRED) {
        refused(cfg, req, route, "key-missing");
        cfg.problems().send(cfg.problems().keyMissing(route.operation()), res);
      } else {
        chain.doFilter(request, response);
      }
      return;
    }
    if (key.problem() != null) {
      refused(cfg, req, route, "key-malformed");
      cfg.problems().send(cfg.problems().keyMalformed(key.problem()), res);
      return;
    }
    // Every answer to a keyed request, replays and refusals included, carries the key back as the
    // client sent it; the handler's own field of that name and stored ones are never sent.
    res.setHeader(KEY_HEADER, key.fieldValue());
    req.setAttribute(APPLIED, Boolean.TRUE); // forwards and error dispatches of this request pass through
    req.setAttribute(KEY_ATTRIBUTE, key.key());

    int max = cfg.maxBodyBytes();
    long declared = req.getContentLengthLong();
    if (declared > max) {
      tooLarge(cfg, req, route, res, "the request announces a body of " + declared + " bytes (Content-Length); at most " + max + " bytes are accepted");
      return;
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
          tooLarge(cfg, req, route, res, "the multipart/form-data body is over a limit of the server: " + e.getMessage());
        } else {
          refused(cfg, req, route, "payload-invalid");
          cfg.problems().send(cfg.problems().payloadInvalid(
              "the body is declared as " + req.getContentType() + " but cannot be read: " + e.getMessage()), res);
        }
        return;
      }
      if (parts != null) {
        if (parts.bytes() > max) {
          tooLarge(cfg, req, route, res, "the parts of the request body add up to " + parts.bytes() + " bytes; at most " + max + " bytes are accepted");
          return;
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
        tooLarge(cfg, req, route, res, "the request body is longer than " + max + " bytes, the most accepted");
        return;
      }
      if (form && body.length == 0 && req.getContentLengthLong() != 0) {
        // An earlier filter read a parameter (a CSRF check, a hidden-method filter), so the
        // container had consumed the form before this filter: its fields stay the container's,
        // and they are what is fingerprinted (with a truly empty body, they are the query's).
        FormParts fields = FormParts.ofParameters(req);
        if (fields.bytes() > max) {
          tooLarge(cfg, req, route, res, "the form's fields add up to " + fields.bytes() + " bytes; at most " + max + " bytes are accepted");
          return;
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
      refused(cfg, req, route, "payload-invalid");
      cfg.problems().send(cfg.problems().payloadInvalid(
          "the body is declared as " + req.getContentType() + " but is not valid: " + e.getMessage()), res);
      return;
    }
    String principal = Scope.principalPart(cfg.principalResolver().resolve(req), cfg.anonymousPrincipal());
    IdempotentRequest idempotent = new IdempotentRequest(Scope.of(principal, operation(cfg, req.getMethod(), path, req.getContextPath(), route)),
        key.key(), fingerprint);
    IdempotencyFilterConfig.Route answering = route;
    // Named after the handler now; a key stored under a route's name (before the change) is
    // answered there, by that route's engine, never run again under the new name.
    Earlier earlier;
    try {
      earlier = earlierRecord(cfg, req.getMethod(), path, req.getContextPath(), principal, key.key(), idempotent.scope().operation());
    } catch (RuntimeException e) {
      cfg.problems().send(cfg.problems().storeUnavailable(), res);
      return;
    }
    if (earlier != null) {
      idempotent = new IdempotentRequest(earlier.scope(), key.key(), fingerprint);
      answering = earlier.route();
    }
    req.setAttribute(REQUEST_ATTRIBUTE, idempotent);

    Run run = new Run(cfg, idempotent, buffered, res, chain);
    AttemptResult result;
    try {
      result = cfg.engineFor(answering).attempt(idempotent, run);
    } catch (RuntimeException e) {
      if (run.failure != null) {
        OutcomeUnknownException unknown = outcomeUnknownIn(run.failure);
        if (unknown != null && !res.isCommitted()) {
          // The handler says its outcome is unknown, such as an operation of steps that stopped
          // after some of them (JdbcStepOperations.runClaimed): 503 with Retry-After, so that the
          // caller retries with the same key, which resumes it, rather than with a new one.
          res.resetBuffer();
          cfg.problems().send(cfg.problems().forException(unknown).orElseThrow(), res);
          return;
        }
        rethrow(run.failure); // the handler's own failure, as it was (nothing of it is kept)
      }
      throw e;
    }
    answer(cfg, result, run, res);
  }

  /** @return the {@link OutcomeUnknownException} that {@code t} is or wraps (a few causes deep), or {@code null} */
  private static OutcomeUnknownException outcomeUnknownIn(Throwable t) {
    Throwable c = t;
    for (int depth = 0; c != null && depth < 5; depth++, c = c.getCause()) {
      if (c instanceof OutcomeUnknownException unknown) {
        return unknown;
      }
    }
    return null;
  }

  /** Nothing to release: the filter holds no resources of its own. */
  @Override
  public void destroy() {}

  /** The handler, as the engine's effect; remembers what it captured and how it ended. */
  private static final class Run implements Effect {
    final IdempotencyFilterConfig cfg;
    final BufferedRequest request;
    final HttpServletResponse response;
    final FilterChain chain;
    final IdempotentRequest idempotent;
    CapturingResponse captured;
    /** What the handler threw after part of its answer had reached the client, or as it ended. */
    Throwable failure;
    /** Whether the key, claimed as the answer began to stream, turned out to be another attempt's. */
    boolean claimLost;

    Run(IdempotencyFilterConfig cfg, IdempotentRequest idempotent, BufferedRequest request, HttpServletResponse response,
        FilterChain chain) {
      this.cfg = cfg;
      this.idempotent = idempotent;
      this.request = request;
      this.response = response;
      this.chain = chain;
    }

    @Override
    public StoredResponse run(EffectContext context) throws Exception {
      if (context.inTransaction()) {
        request.setAttribute(CONNECTION_ATTRIBUTE, context.connection());
      } else {
        request.setAttribute(LEASE_CONTEXT_ATTRIBUTE, context.lease());
      }
      // The engine may run the effect again (a round the database rolled back): nothing of an
      // earlier run's answer or failure is kept.
      captured = new CapturingResponse(response, request.getRequestURI(), cfg.maxResponseBytes());
      claimLost = false;
      failure = null;
      // An answer that streams to the client needs its key first: in key-last order the engine
      // claims it now, and refuses when another attempt holds it or has answered.
      captured.beforeOverflow(() -> {
        try {
          context.ensureClaimed();
        } catch (RuntimeException e) {
          claimLost = true;
          throw e;
        }
      });
      try {
        chain.doFilter(request, captured);
        captured.finish(); // the writer's last characters may still push the body past the limit
      } catch (Throwable t) {
        if (claimLost) {
          throw t; // nothing reached the client; the engine answers from the attempt that holds the key
        }
        failure = t;
        if (!captured.overflowed()) {
          throw t; // nothing reached the client: the engine keeps nothing of the attempt (contract rule 6)
        }
        // The status, header fields and part of the body already reached the client: the effect
        // happened as far as it can tell. The key stays completed with a record of what was sent
        // rather than freed for a second run; the filter rethrows the failure afterwards.
      } finally {
        request.removeAttribute(CONNECTION_ATTRIBUTE); // the transaction's connection is not the handler's after this
      }
      return toStored(cfg, captured);
    }
  }

  /** A warning without the key (logs carry no keys or principals): the limit is too low for this route. */
  private static void notStoredWarning(IdempotencyFilterConfig cfg, Run run) {
    LOG.log(Level.WARNING, "idempotency filter: an answer to " + run.idempotent.scope().operation() + " (status "
        + run.captured.getStatus() + ", " + run.captured.bodyLength() + " bytes" + (run.failure != null ? " before the handler failed" : "")
        + ") was longer than maxResponseBytes (" + cfg.maxResponseBytes() + " bytes): it was streamed to the client and only"
        + " its status is stored, so a retry with the same key is answered 422 " + IdemProblems.RESPONSE_TOO_LARGE
        + " and does not run the operation again; raise maxResponseBytes if such retries must be replayed");
  }

  private static void rethrow(Throwable t) throws IOException, ServletException {
    if (t instanceof IOException io) {
      throw io;
    }
    if (t instanceof ServletException se) {
      throw se;
    }
    if (t instanceof RuntimeException re) {
      throw re;
    }
    if (t instanceof Error err) {
      throw err;
    }
    throw new ServletException(t);
  }

  /**
   * Builds what is stored: the whole answer, or after an overflow the record of it without its
   * body. Never throws, since the handler's effect has happened.
   */
  private static StoredResponse toStored(IdempotencyFilterConfig cfg, CapturingResponse captured) {
    int status = captured.getStatus();
    StoredResponse.Builder b = StoredResponse.builder(status >= 100 && status <= 599 ? status : 500);
    for (Map.Entry<String, List<String>> field : captured.headerFields().entrySet()) {
      String name = field.getKey();
      if (!cfg.replayedHeaders().contains(name) || HeaderRules.neverStored(name)) {
        continue;
      }
      for (String value : field.getValue()) {
        try {
          b.header(name, value);
        } catch (IllegalArgumentException e) {
          LOG.log(Level.WARNING, "idempotency filter: response header " + name + " cannot be stored and is left out of replays: " + e.getMessage());
        }
      }
    }
    if (captured.overflowed()) {
      return b.bodyNotStored(captured.bodyLength()).build();
    }
    return b.body(captured.body()).build();
  }

  /** Sends what the engine's result says: the handler's answer, a replay, or one of the filter's problems. */
  private static void answer(IdempotencyFilterConfig cfg, AttemptResult result, Run run, HttpServletResponse res)
      throws IOException, ServletException {
    RuntimeException e = result.failure().orElse(null);
    switch (result.kind()) {
      case REPLAYED:
        replay(cfg, result.outcome().orElseThrow().response(), res);
        return;
      case EXECUTED:
      case RELEASED:
        if (e != null) {
          // The handler ran and answered with what the response policy does not store (a 5xx), and
          // the release failed: the answer is sent as it is; the claim expires with its lease.
          LOG.log(Level.WARNING, "idempotency filter: the handler ran but its claim could not be released; sending its answer unstored", e);
        }
        if (run.captured.overflowed()) {
          // Already streamed to the client; the engine stored the record without the body (or
          // released the claim, as its response policy says for this status).
          if (result.kind() == AttemptResult.Kind.EXECUTED) {
            notStoredWarning(cfg, run);
          }
          if (run.failure != null) {
            rethrow(run.failure); // the handler failed mid-answer: the container aborts the exchange
          }
        } else {
          run.captured.writeTo(res);
        }
        return;
      default:
        break;
    }
    if (run.failure != null) {
      // The handler threw after part of its answer was sent, and the key could not be completed.
      // Let the container see the original.
      rethrow(run.failure);
    }
    switch (result.kind()) {
      case KEY_REUSED:
      case IN_PROGRESS:
        break;
      case OUTCOME_UNKNOWN:
        if (IdemProblems.phaseOf(result) == OutcomeUnknownException.Phase.COMPLETION) {
          // Lease mode: the handler ran, and its answer is not stored (or is unknown to be).
          // Sending it would be a fresh answer that a retry could contradict; the retry with the
          // same key gets the stored answer or resumes the operation as a recovery.
          if (run.captured.overflowed()) {
            // An answer over the limit has already streamed to the client; it cannot be withdrawn.
            LOG.log(Level.WARNING, "idempotency filter: the handler ran and its answer over the limit was sent, but the key could not be completed", e);
            return;
          }
          LOG.log(Level.WARNING, "idempotency filter: the handler ran but its answer could not be stored; answering 503 outcome-unknown", e);
          break;
        }
        // Transactional mode: the commit was sent and its acknowledgement lost.
        abortIfStreamed(res, e);
        logTransactionFailed(result.kind(), e);
        break;
      case ROLLED_BACK:
      case REQUEST_FAILED:
        abortIfStreamed(res, e);
        logTransactionFailed(result.kind(), e);
        break;
      case STORED_RESPONSE_UNREADABLE:
        // The key is answered but its stored response fails authentication or decoding: never
        // replay bytes that cannot be authenticated, never run the operation again. Not a 503: a
        // retry cannot succeed until an operator restores the key or investigates the tampering.
        LOG.log(Level.ERROR, "idempotency filter: a stored response cannot be read; answering 500", e);
        break;
      case STORE_UNAVAILABLE:
      default:
        // The claim failed (already retried by the engine with the same owner token), or an
        // interrupted wait: the handler did not run.
        LOG.log(Level.WARNING, "idempotency filter: the key could not be claimed; answering 503", e);
    }
    cfg.problems().send(cfg.problems().forResult(result), res);
  }

  /**
   * Transactional mode, an answer over maxResponseBytes: it streamed to the client before the
   * commit, and storing its record or the commit failed. Nothing can be taken back or appended;
   * failing the exchange makes the container close the connection, so the client sees a broken
   * answer (not a clean one for writes that were rolled back) and retries.
   */
  private static void abortIfStreamed(HttpServletResponse res, RuntimeException e) throws IOException {
    if (res.isCommitted()) {
      LOG.log(Level.ERROR, "idempotency filter: an answer longer than maxResponseBytes had already streamed to the client"
          + " when its transaction failed to commit; aborting the response", e);
      throw new IOException("the transaction behind this streamed answer did not commit", e);
    }
  }

  /** Transactional mode: the handler ran, but its transaction did not commit, or may not have. */
  private static void logTransactionFailed(AttemptResult.Kind kind, RuntimeException e) {
    if (kind == AttemptResult.Kind.OUTCOME_UNKNOWN) {
      // The commit was sent and its acknowledgement lost. The writes and the stored response
      // committed together or not at all, so a retry with the key is safe.
      LOG.log(Level.WARNING, "idempotency filter: the outcome of the handler's transaction is unknown (the commit's"
          + " acknowledgement was lost); answering 503", e);
    } else if (kind == AttemptResult.Kind.REQUEST_FAILED) {
      // The request itself failed (the database refused its data, or the handler answered success
      // after an error that rolled its writes back). Not a store outage: "retry later" would fail
      // the same way.
      LOG.log(Level.WARNING, "idempotency filter: the handler's transaction was rolled back by a failure of the"
          + " request itself; answering 500", e);
    } else {
      // The handler ran, but its writes rolled back with the key's record. Its answer would
      // describe an effect that did not happen; the client retries.
      LOG.log(Level.WARNING, "idempotency filter: the handler's transaction did not commit; answering 503", e);
    }
  }

  private static void replay(IdempotencyFilterConfig cfg, StoredResponse stored, HttpServletResponse res) throws IOException {
    if (!stored.bodyStored()) {
      tooLargeToReplay(cfg, stored, res);
      return;
    }
    res.setStatus(stored.status());
    for (Map.Entry<String, List<String>> field : stored.headers().entrySet()) {
      String name = field.getKey();
      if (!cfg.replayedHeaders().contains(name) || HeaderRules.neverStored(name)) {
        continue; // also for records written under another configuration
      }
      for (String value : field.getValue()) {
        if (name.equalsIgnoreCase("Content-Type")) {
          res.setContentType(value);
        } else {
          res.addHeader(name, value);
        }
      }
    }
    res.setHeader(REPLAYED_HEADER, "true");
    byte[] body = stored.body();
    res.setContentLength(body.length);
    if (body.length > 0) {
      res.getOutputStream().write(body);
    }
  }

  /**
   * Writes {@code problem} with the configured renderer; one that fails before it wrote anything is
   * replaced, for this answer, by RFC 9457 problem details, so that a broken renderer never turns a
   * refusal into a 500 with a stack trace.
   *
   * @param renderer the configured renderer
   * @param problem what to answer
   * @param res the uncommitted response
   * @throws IOException if writing fails
   */
  public static void render(ProblemRenderer renderer, IdemProblem problem, HttpServletResponse res) throws IOException {
    try {
      renderer.render(problem, res);
    } catch (RuntimeException e) {
      if (res.isCommitted()) {
        throw e;
      }
      LOG.log(Level.WARNING, "idempotency filter: the application's ProblemRenderer failed; answering with RFC 9457 problem details", e);
      res.resetBuffer();
      ProblemRenderer.rfc9457().render(problem, res);
    }
  }

  /** The answer to a retry whose first answer was too large to store ({@link IdemProblems#responseTooLarge}). */
  private static void tooLargeToReplay(IdempotencyFilterConfig cfg, StoredResponse stored, HttpServletResponse res) throws IOException {
    cfg.problems().send(cfg.problems().responseTooLarge(stored), res);
  }

  private static void tooLarge(IdempotencyFilterConfig cfg, HttpServletRequest req, IdempotencyFilterConfig.Route route,
      HttpServletResponse res, String detail) throws IOException {
    refused(cfg, req, route, "body-too-large");
    swallow(req);
    cfg.problems().send(cfg.problems().bodyTooLarge(detail), res);
  }

  /** Tells the configuration's listener of a refusal before the engine; a listener must not change the answer. */
  private static void refused(IdempotencyFilterConfig cfg, HttpServletRequest req, IdempotencyFilterConfig.Route route, String reason) {
    try {
      cfg.listener().refused(operation(cfg, req.getMethod(), path(req), req.getContextPath(), route), reason);
    } catch (RuntimeException ignored) {
      // a listener must not change the answer
    }
  }

  /** How much of an unread body over the limit is read and dropped before the 413 answer. */
  static final int SWALLOW_BYTES = 64 * 1024;

  /**
   * Reads and drops up to {@link #SWALLOW_BYTES} of what is left of a refused body. A server that
   * answers and closes the connection with request bytes still unread makes its TCP stack send a
   * reset, and a client that is still sending then loses the 413 it was sent (it sees a broken
   * connection, and may retry with the same body). Tomcat does the same ({@code maxSwallowSize});
   * a longer body is left to the container, which closes the connection.
   */
  private static void swallow(HttpServletRequest req) {
    try {
      InputStream in = req.getInputStream();
      byte[] drop = new byte[8192];
      long left = SWALLOW_BYTES;
      for (int n; left > 0 && (n = in.read(drop, 0, (int) Math.min(drop.length, left))) > 0; ) {
        left -= n;
      }
    } catch (IOException | IllegalStateException | UnsupportedOperationException ignored) {
      // the stream is spent (a parsed form or multipart body) or the client went away: nothing to drop
    }
  }

  /**
   * The scope's operation: the route's {@code "<METHOD> <pattern>"}, with the context path before
   * the pattern when the application is not at the root ({@code "POST /shop/notes"} for the route
   * {@code POST /notes} under {@code /shop}), so that two applications on one store never share a
   * scope. If that is not a valid scope part (longer than {@value Scope#MAX_PART_LENGTH}
   * characters, a control character), it is replaced by {@code "sha256:"} and the 64 hex digits of
   * the SHA-256 of its UTF-8 bytes; no route operation starts so (a method is a token, without
   * {@code ':'}), so it stays distinct.
   */
  /**
   * A key's live record under a route's own operation, found by {@link #earlierRecord}.
   *
   * @param route the route whose operation the record is under; its engine answers the request
   * @param scope the record's scope
   * @param status what the store knows of the key there, never absent
   */
  record Earlier(IdempotencyFilterConfig.Route route, Scope scope, KeyStatus status) {}

  /**
   * With {@link IdempotencyFilterConfig.Builder#operationNames} and earlier names to look under:
   * the key's record under the operation of a route that matches the request, whose name differs
   * from the one the request is named by now. Every matching route in order, not only the first:
   * an earlier version may have protected the path with a catch-all that a route of its own now
   * precedes. The filter answers such a request there; the key status endpoint reports it.
   *
   * @param current the operation the request is named by now
   * @return the first such record, or {@code null} when there is none or nothing is looked under
   * @throws RuntimeException the store's failure to read a status
   */
  static @org.jspecify.annotations.Nullable Earlier earlierRecord(IdempotencyFilterConfig cfg, String method, String path,
      @org.jspecify.annotations.Nullable String context, String principal, dev.idem.core.IdempotencyKey key, String current) {
    if (cfg.earlierNames() == null) {
      return null;
    }
    java.util.Set<String> looked = new java.util.HashSet<>();
    looked.add(current);
    for (IdempotencyFilterConfig.Route r : cfg.routes()) {
      if (!r.matches(method, path)) {
        continue;
      }
      String routeOperation = operation(context, r);
      if (!looked.add(routeOperation)) {
        continue;
      }
      Scope scope = Scope.of(principal, routeOperation);
      KeyStatus status = r.statusReader().orElse(cfg.earlierNames()).status(scope, key);
      if (!(status instanceof KeyStatus.Absent)) {
        return new Earlier(r, scope, status);
      }
    }
    return null;
  }

  /**
   * The scope's operation: the handler's path template when the configuration names operations
   * after handlers ({@link IdempotencyFilterConfig.Builder#operationNames}) and it knows one, with
   * the context path in front as for a route; else the route's ({@link #operation(HttpServletRequest,
   * IdempotencyFilterConfig.Route)}).
   */
  static String operation(IdempotencyFilterConfig cfg, String method, String path, @org.jspecify.annotations.Nullable String context,
      IdempotencyFilterConfig.Route route) {
    OperationNamer namer = cfg.operationNamer();
    String template = namer == null ? null : namer.pathTemplate(method, path);
    if (template == null || !template.startsWith("/")) {
      return operation(context, route);
    }
    boolean root = context == null || context.isEmpty() || context.equals("/");
    return valid(route.method() + " " + (root ? "" : context) + template);
  }

  static String operation(HttpServletRequest req, IdempotencyFilterConfig.Route route) {
    return operation(req.getContextPath(), route);
  }

  private static String valid(String operation) {
    try {
      Scope.of("x", operation); // validates
      return operation;
    } catch (IllegalArgumentException e) {
      return "sha256:" + Fingerprint.ofBytes(operation.getBytes(StandardCharsets.UTF_8)).hex();
    }
  }

  private static String operation(@org.jspecify.annotations.Nullable String context, IdempotencyFilterConfig.Route route) {
    if (context == null || context.isEmpty() || context.equals("/")) {
      return route.operation();
    }
    return valid(route.method() + " " + context + route.pattern());
  }

  /** The decoded, normalised path inside the context. */
  private static String path(HttpServletRequest req) {
    String servletPath = req.getServletPath();
    String pathInfo = req.getPathInfo();
    String path = (servletPath == null ? "" : servletPath) + (pathInfo == null ? "" : pathInfo);
    return path.isEmpty() ? "/" : path;
  }

  /**
   * Reads at most {@code max} bytes of the body, and one more to tell whether there is more.
   *
   * @return the body, or {@code null} when it is longer than {@code max}
   */
  private static byte[] readBody(HttpServletRequest req, int max) throws IOException {
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
  private static Fingerprint fingerprint(HttpServletRequest req, byte[] body, Fingerprint parsedBody) {
    String query = req.getQueryString();
    Fingerprint.RequestBuilder request = Fingerprint.request()
        .method(req.getMethod())
        .target(req.getRequestURI() + (query == null ? "" : "?" + query))
        .contentType(parsedBody != null ? withoutBoundary(req.getContentType()) : req.getContentType())
        .contentEncoding(joined(req.getHeaders("Content-Encoding")));
    return (parsedBody != null ? request.parsedBody(parsedBody) : request.body(body)).build();
  }

  /**
   * A multipart media type without its {@code boundary} parameter, which clients choose anew for
   * each attempt (RFC 2046 section 5.1.1) and which says nothing once the container parsed the parts;
   * a boundary never contains {@code ;}. {@code null} stays {@code null}.
   */
  static String withoutBoundary(String contentType) {
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
  private static String joined(Enumeration<String> fields) {
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
