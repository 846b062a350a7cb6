package dev.idem.servlet;

import dev.idem.core.AttemptResult;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseContext;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.StoredResponse;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.sql.Connection;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * A Jakarta Servlet 6 filter that implements the {@code Idempotency-Key} HTTP request header field
 * (IETF draft-ietf-httpapi-idempotency-key-header) on an {@link IdempotencyEngine}: the rest of the
 * filter chain, the handler, is the effect that runs at most once per key. Either mode works in any
 * servlet container: lease mode ({@link LeaseIdempotency}, the handler may call anything) or
 * transactional mode ({@code dev.idem.jdbc.TransactionalIdempotency} from idem-jdbc, the claim, the
 * handler's writes and the stored response in one transaction of its database; the handler gets
 * the transaction's connection from {@link #connection(ServletRequest)}). The filter
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
 *   <li>The scope is the principal (from the {@link dev.idem.core.spi.PrincipalResolver}, by default {@code
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
 *       answer, every header and cookie included. The handler gets the claim's {@link
 *       LeaseContext} from {@link #leaseContext(ServletRequest)} and should pass {@code key()}
 *       downstream when {@code recovery()} is {@code true}.
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
 * handler must find what its first run did (see {@link #leaseContext(ServletRequest)}). An answer longer
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
   * (scope, key, owner token, and whether this run takes over an expired lease). {@link
   * #leaseContext(ServletRequest)} reads it typed; the attribute stays for code that reads it
   * directly.
   */
  public static final String LEASE_CONTEXT_ATTRIBUTE = "dev.idem.core.LeaseContext";

  /**
   * The request attribute that holds, in transactional mode, the {@link Connection} of the
   * transaction the handler runs in: what the handler writes on it commits or rolls back with the
   * key's record and the stored response. The handler must not commit, roll back or close it.
   * {@link #connection(ServletRequest)} reads it typed; the attribute stays for code that reads it
   * directly.
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

  // The type URIs under the default base. Each problem's name, status and meaning are IdemProblems's;
  // these only put the name under PROBLEM_TYPE_BASE.

  /** {@link IdemProblems#KEY_MISSING} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_KEY_MISSING = PROBLEM_TYPE_BASE + IdemProblems.KEY_MISSING;
  /** {@link IdemProblems#KEY_MALFORMED} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_KEY_MALFORMED = PROBLEM_TYPE_BASE + IdemProblems.KEY_MALFORMED;
  /** {@link IdemProblems#PAYLOAD_INVALID} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_PAYLOAD_INVALID = PROBLEM_TYPE_BASE + IdemProblems.PAYLOAD_INVALID;
  /** {@link IdemProblems#IN_PROGRESS} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_IN_PROGRESS = PROBLEM_TYPE_BASE + IdemProblems.IN_PROGRESS;
  /** {@link IdemProblems#BODY_TOO_LARGE} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_BODY_TOO_LARGE = PROBLEM_TYPE_BASE + IdemProblems.BODY_TOO_LARGE;
  /** {@link IdemProblems#KEY_REUSED} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_KEY_REUSED = PROBLEM_TYPE_BASE + IdemProblems.KEY_REUSED;
  /** {@link IdemProblems#STORE_UNAVAILABLE} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_STORE_UNAVAILABLE = PROBLEM_TYPE_BASE + IdemProblems.STORE_UNAVAILABLE;
  /** {@link IdemProblems#RESPONSE_TOO_LARGE} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_RESPONSE_TOO_LARGE = PROBLEM_TYPE_BASE + IdemProblems.RESPONSE_TOO_LARGE;
  /** {@link IdemProblems#OUTCOME_UNKNOWN} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_OUTCOME_UNKNOWN = PROBLEM_TYPE_BASE + IdemProblems.OUTCOME_UNKNOWN;
  /** {@link IdemProblems#REQUEST_FAILED} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_REQUEST_FAILED = PROBLEM_TYPE_BASE + IdemProblems.REQUEST_FAILED;
  /** {@link IdemProblems#STORED_RESPONSE_UNREADABLE} under {@link #PROBLEM_TYPE_BASE}: {@value}. */
  public static final String PROBLEM_STORED_RESPONSE_UNREADABLE = PROBLEM_TYPE_BASE + IdemProblems.STORED_RESPONSE_UNREADABLE;

  /** Marks a request the filter has taken on, so that its forwards and error dispatches pass through. */
  static final String APPLIED = IdempotencyFilter.class.getName() + ".applied";
  /** Holds the key of a protected request ({@link #protectedKey}). */
  static final String KEY_ATTRIBUTE = IdempotencyFilter.class.getName() + ".key";
  /** Holds the {@link IdempotentRequest} of a protected request ({@link #protectedRequest}). */
  static final String REQUEST_ATTRIBUTE = IdempotencyFilter.class.getName() + ".request";

  /**
   * The connection of the transaction the handler runs in, in transactional mode: what the handler
   * writes on it commits or rolls back with the key's record and the stored response. The handler
   * must not commit, roll back or close it, nor keep it after it returns.
   *
   * <pre>{@code
   * Connection tx = IdempotencyFilter.connection(request)
   *     .orElseThrow(() -> new IllegalStateException("not in the idempotency filter's transaction"));
   * }</pre>
   *
   * @param request the request the handler is serving, never {@code null}
   * @return the connection while the handler of a protected request runs in a transactional
   *     engine's transaction; empty in lease mode, for a request the filter does not protect, and
   *     once the handler has returned
   * @throws NullPointerException if {@code request} is {@code null}
   */
  public static Optional<Connection> connection(ServletRequest request) {
    Object value = Objects.requireNonNull(request, "request").getAttribute(CONNECTION_ATTRIBUTE);
    return value instanceof Connection c ? Optional.of(c) : Optional.empty();
  }

  /**
   * The claim of the request the handler is serving, in lease mode: its scope, key, owner token,
   * and whether this run takes over an expired lease ({@link LeaseContext#recovery()}), when the
   * handler must find what a first run did and pass {@link LeaseContext#key()} downstream.
   *
   * @param request the request the handler is serving, never {@code null}
   * @return the claim while a lease-mode engine runs the handler of a protected request (it stays
   *     on the request afterwards); empty in transactional mode and for a request the filter does
   *     not protect
   * @throws NullPointerException if {@code request} is {@code null}
   */
  public static Optional<LeaseContext> leaseContext(ServletRequest request) {
    Object value = Objects.requireNonNull(request, "request").getAttribute(LEASE_CONTEXT_ATTRIBUTE);
    return value instanceof LeaseContext lease ? Optional.of(lease) : Optional.empty();
  }

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
  public static Optional<dev.idem.core.IdempotencyKey> protectedKey(ServletRequest request) {
    Object key = Objects.requireNonNull(request, "request").getAttribute(KEY_ATTRIBUTE);
    return key instanceof dev.idem.core.IdempotencyKey k ? Optional.of(k) : Optional.empty();
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
  public static Optional<IdempotentRequest> protectedRequest(ServletRequest request) {
    Object value = Objects.requireNonNull(request, "request").getAttribute(REQUEST_ATTRIBUTE);
    return value instanceof IdempotentRequest r ? Optional.of(r) : Optional.empty();
  }

  /**
   * The configuration: from the constructor, or from the servlet context in {@link #init}; {@code
   * null} until then, which {@link #doFilter} refuses with a {@link ServletException}.
   */
  private volatile @Nullable IdempotencyFilterConfig config;

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
   * @return the configuration the filter runs on: the constructor's, or the servlet context's once
   *     {@link #init} took it; {@code null} before that for a filter made with the no-argument
   *     constructor. Safe to call from any thread.
   */
  public @Nullable IdempotencyFilterConfig config() {
    return config;
  }

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
   *     or of the {@link dev.idem.core.spi.PrincipalResolver}
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
    RequestReader.Reading reading = RequestReader.read(cfg, req, res);
    if (reading instanceof RequestReader.Refusal refusal) {
      AnswerWriter.refuse(cfg, req, refusal, res);
      return;
    }
    if (!(reading instanceof RequestReader.Protected protect)) {
      chain.doFilter(request, response); // no route, or no key on an optional one
      return;
    }
    HandlerEffect run = new HandlerEffect(cfg, protect.request(), protect.body(), res, chain);
    AttemptResult result;
    try {
      result = cfg.engineFor(protect.route()).attempt(protect.request(), run);
    } catch (RuntimeException e) {
      AnswerWriter.failed(cfg, e, run, res);
      return;
    }
    AnswerWriter.write(cfg, result, run, res);
  }

  /** Nothing to release: the filter holds no resources of its own. */
  @Override
  public void destroy() {}
}
