package dev.idem.grpc;

import com.google.rpc.ErrorInfo;
import com.google.rpc.RetryInfo;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.grpc.internal.CapturingServerCall;
import dev.idem.grpc.internal.MethodPolicies;
import dev.idem.grpc.internal.Refusals;
import io.grpc.BindableService;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Runs each keyed <b>unary</b> call at most once per scope and idempotency key, on any {@link
 * IdempotencyEngine} (lease mode: {@code LeaseIdempotency} on any {@code LeaseStore}; transactional
 * mode: {@code TransactionalIdempotency}, whose connection the handler reads from {@link
 * GrpcTransactions#connection()}), and answers
 * its retries, hedged copies and duplicates with the stored answer instead of running the handler
 * again. Streaming methods (client, server or bidirectional) pass through untouched: they are not
 * protected. A streaming method named as protected ({@link Builder#protect}, {@link
 * Builder#requestKey}) is refused while the interceptor is built; given the services it will serve
 * ({@link Builder#services}, {@link Builder#bindableServices}), {@link Builder#build()} logs the
 * streaming methods it leaves unprotected ({@link #unprotectedStreamingMethods()}).
 *
 * <h2>What a protected call is</h2>
 *
 * <ul>
 *   <li><b>Key</b>: the request's own field when the method has one ({@link
 *       Builder#requestKey(MethodDescriptor, Function)}, AIP-155's {@code request_id}) and it is not
 *       empty, else the metadata entry {@value IdempotencyKeys#DEFAULT_HEADER} ({@link
 *       Builder#keyHeader(String)}). A call with neither passes through unprotected, or is refused
 *       with {@code INVALID_ARGUMENT} when {@link Builder#keyRequired(boolean)}.
 *   <li><b>Scope</b>: the principal from the {@link PrincipalResolver} of a {@link GrpcCall} (by default the fixed
 *       {@link Builder#principal(String)}), and the method's full name ({@code
 *       package.Service/Method}) as the operation.
 *   <li><b>Fingerprint</b>: {@link MessageFingerprints#of(MethodDescriptor, Object)}, SHA-256 of the
 *       request message's deterministic serialization.
 *   <li><b>Stored answer</b>: the response message's bytes (as the method's response marshaller
 *       writes them), the status code and description, and the trailers named in {@link
 *       Builder#keptTrailers(String...)} (by default {@code grpc-status-details-bin}, the error
 *       details of a {@code google.rpc.Status}). Response headers the handler sends are given to the
 *       call that ran it and not stored; a replay sends {@code idempotent-replayed: true} as its
 *       only header.
 * </ul>
 *
 * <h2>How the handler runs as the engine's effect</h2>
 *
 * <p>grpc-java delivers a unary request to the handler in {@code onHalfClose} of the call's
 * listener, and the handler answers through the {@link ServerCall}, either before {@code
 * onHalfClose} returns (a handler that answers inline) or later, from any thread (one that awaits a
 * future). The interceptor hands the handler a forwarding call that captures its answer instead of
 * sending it; in {@code onHalfClose} it computes the key and fingerprint and calls {@link
 * IdempotencyEngine#attempt}, whose effect passes {@code onHalfClose} on to the handler and then
 * <em>blocks the calling thread</em> until the handler closes the captured call (at once for an
 * inline handler), at most {@link Builder#answerTimeout(Duration)}. The effect returns the captured
 * answer as a {@link StoredResponse}; once the engine has stored (or released) it, the interceptor
 * sends it on the transport's call. A replay sends the stored message and status without calling
 * the handler; a refusal closes the call with the status of the table in docs/grpc.md, with {@code
 * google.rpc.ErrorInfo} (domain {@value #ERROR_DOMAIN}) and, where a retry is welcome, {@code
 * google.rpc.RetryInfo} in the {@code grpc-status-details-bin} trailer.
 *
 * <p>Consequences: each protected call in progress holds one thread of the server's executor
 * (grpc-java's default executor is a cached pool; a bounded executor needs room for them, and a
 * server on {@code directExecutor()} must have handlers that answer inline). While the answer is
 * captured the handler's call reports {@link ServerCall#isCancelled()} {@code false}, so an effect
 * that began finishes and is stored even when the client gave up (its retry is then replayed); the
 * call's {@link Context} is still cancelled with the client's attempt.
 *
 * <p>Which answers are kept: a handler's status that is transient in gRPC's terms ({@code
 * CANCELLED}, {@code UNKNOWN}, {@code DEADLINE_EXCEEDED}, {@code RESOURCE_EXHAUSTED}, {@code
 * ABORTED}, {@code INTERNAL}, {@code UNAVAILABLE}, {@code DATA_LOSS}) always releases the key, so a
 * retry runs again; every other answer goes to the engine's {@code ResponsePolicy} with the HTTP
 * status google.rpc.Code maps its code to (the standard policy stores {@code OK} and the
 * deterministic client errors, and releases {@code UNIMPLEMENTED}). A handler that throws, or does
 * not answer within the answer timeout, releases the key too.
 *
 * <p>Immutable and thread-safe: one instance serves every call.
 */
public final class IdempotencyServerInterceptor implements ServerInterceptor {

  /** The {@code google.rpc.ErrorInfo} domain of Idem's refusals: {@value}. */
  public static final String ERROR_DOMAIN = Refusals.ERROR_DOMAIN;

  /** The default principal of callers the resolver leaves anonymous: {@value}. */
  public static final String DEFAULT_ANONYMOUS_PRINCIPAL = "anonymous";

  /** The default answer timeout: 30 seconds, the default lease. */
  public static final Duration DEFAULT_ANSWER_TIMEOUT = Duration.ofSeconds(30);

  /** The default retry delay after a store failure: 1 second. */
  public static final Duration DEFAULT_STORE_RETRY_DELAY = Duration.ofSeconds(1);

  private final IdempotencyEngine engine;
  private final Metadata.Key<String> keyHeader;
  private final PrincipalResolver<? super GrpcCall> principals;
  private final String anonymousPrincipal;
  private final Map<String, Function<Object, @Nullable String>> requestKeys;
  private final boolean keyRequired;
  private final List<String> keptTrailers;
  private final Duration answerTimeout;
  private final Duration storeRetryDelay;
  private final Set<String> onlyMethods;
  private final MethodPolicies policies;
  private final List<String> unprotectedStreaming;

  private static final System.Logger LOG = System.getLogger(IdempotencyServerInterceptor.class.getName());

  private IdempotencyServerInterceptor(Builder b, List<String> unprotectedStreaming) {
    this.engine = b.engine;
    this.keyHeader = b.keyHeader;
    this.principals = b.principals;
    this.anonymousPrincipal = b.anonymousPrincipal;
    this.requestKeys = Map.copyOf(b.requestKeys);
    this.keyRequired = b.keyRequired;
    this.keptTrailers = List.copyOf(b.keptTrailers);
    this.answerTimeout = b.answerTimeout;
    this.storeRetryDelay = b.storeRetryDelay;
    Set<String> only = new LinkedHashSet<>(b.onlyMethods.keySet());
    if (!only.isEmpty()) {
      only.addAll(b.requestKeys.keySet()); // a method with a request key is protected too
    }
    this.onlyMethods = Set.copyOf(only);
    this.policies = b.policies.frozenCopy(); // the builder may go on being used
    this.unprotectedStreaming = List.copyOf(unprotectedStreaming);
  }

  /**
   * The streaming methods of the services given to the builder ({@link Builder#services}, {@link
   * Builder#bindableServices}), which pass through this interceptor unprotected; {@link
   * Builder#build()} logged them at {@code INFO}.
   *
   * @return their full names ({@code package.Service/Method}) followed by their type in
   *     parentheses, for example {@code "orders.Orders/Watch (SERVER_STREAMING)"}, sorted; empty
   *     when no services were given or none has a streaming method; never {@code null},
   *     unmodifiable
   */
  public List<String> unprotectedStreamingMethods() {
    return unprotectedStreaming;
  }

  /**
   * @param engine the engine that runs the calls, never {@code null}: lease mode ({@code
   *     LeaseIdempotency}) on any store
   * @return a builder: key from {@value IdempotencyKeys#DEFAULT_HEADER}, optional, principal
   *     {@value #DEFAULT_ANONYMOUS_PRINCIPAL}, answer timeout 30 s, store retry delay 1 s
   * @throws NullPointerException if {@code engine} is {@code null}
   */
  public static Builder builder(IdempotencyEngine engine) {
    return new Builder(engine);
  }

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
      ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    MethodDescriptor<ReqT, RespT> method = call.getMethodDescriptor();
    if (method.getType() != MethodDescriptor.MethodType.UNARY) {
      return next.startCall(call, headers); // streaming: not protected
    }
    MethodPolicies.Policy policy = policies.find(method.getFullMethodName());
    if (policy == null && !onlyMethods.isEmpty() && !onlyMethods.contains(method.getFullMethodName())) {
      return next.startCall(call, headers); // not one of the methods protect(...) or a method policy named
    }
    IdempotencyEngine engine = policy == null ? this.engine : policy.engine();
    boolean keyRequired = policy == null ? this.keyRequired : policy.keyRequired();
    String headerKey = headers.get(keyHeader);
    Function<Object, @Nullable String> field = requestKeys.get(method.getFullMethodName());
    if (headerKey == null && field == null) {
      if (!keyRequired) {
        return next.startCall(call, headers);
      }
      Refusals.refuse(call, Status.Code.INVALID_ARGUMENT, "KEY_MISSING",
          "this method requires the idempotency key " + keyHeader.name(), null);
      return new ServerCall.Listener<>() {};
    }
    String principal = Scope.principalPart(principals.resolve(new GrpcCall(call, headers, Context.current())), anonymousPrincipal);
    Scope scope = Scope.of(principal, method.getFullMethodName());
    CapturingServerCall<ReqT, RespT> capture = new CapturingServerCall<>(call);
    return new ProtectedCall<>(next.startCall(capture, headers), capture, engine, keyRequired, scope, headerKey, field,
        keptTrailers, answerTimeout, storeRetryDelay);
  }

  static Metadata.Key<String> asciiKey(String name) {
    Objects.requireNonNull(name, "name");
    if (name.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
      throw new IllegalArgumentException("an idempotency key is ASCII metadata, not binary: " + name);
    }
    return Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER);
  }

  /** Builds an {@link IdempotencyServerInterceptor}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final IdempotencyEngine engine;
    private Metadata.Key<String> keyHeader = IdempotencyKeys.HEADER;
    private PrincipalResolver<? super GrpcCall> principals = PrincipalResolver.anonymous();
    private String anonymousPrincipal = DEFAULT_ANONYMOUS_PRINCIPAL;
    private final Map<String, Function<Object, @Nullable String>> requestKeys = new HashMap<>();
    private boolean keyRequired;
    private final List<String> keptTrailers = new ArrayList<>(List.of("grpc-status-details-bin"));
    private Duration answerTimeout = DEFAULT_ANSWER_TIMEOUT;
    private Duration storeRetryDelay = DEFAULT_STORE_RETRY_DELAY;
    private final Map<String, MethodDescriptor.MethodType> onlyMethods = new LinkedHashMap<>();
    private final List<ServerServiceDefinition> services = new ArrayList<>();
    private final MethodPolicies policies = new MethodPolicies();

    private Builder(IdempotencyEngine engine) {
      this.engine = Objects.requireNonNull(engine, "engine");
    }

    /**
     * @param name the metadata key of the idempotency key, an ASCII key (default {@value
     *     IdempotencyKeys#DEFAULT_HEADER})
     * @return this builder
     * @throws NullPointerException if {@code name} is {@code null}
     * @throws IllegalArgumentException if {@code name} is no valid ASCII metadata key
     */
    public Builder keyHeader(String name) {
      this.keyHeader = asciiKey(name);
      return this;
    }

    /**
     * The key of one method from its request message (AIP-155's {@code request_id}, AEP-155's
     * {@code idempotency_key}); used when it returns a non-empty string, else the metadata key.
     *
     * @param method a unary method, never {@code null}
     * @param field reads the key from a request, never {@code null}; may return {@code null} or
     *     empty for none; must be thread-safe
     * @param <ReqT> the request type
     * @return this builder
     * @throws IllegalArgumentException if {@code method} is not unary (streaming methods are not
     *     protected); the message names the method and its type
     */
    @SuppressWarnings("unchecked")
    public <ReqT> Builder requestKey(MethodDescriptor<ReqT, ?> method, Function<? super ReqT, @Nullable String> field) {
      Objects.requireNonNull(method, "method");
      Objects.requireNonNull(field, "field");
      requireUnary(method.getFullMethodName(), method.getType(), "requestKey(...)");
      requestKeys.put(method.getFullMethodName(), (Function<Object, @Nullable String>) field);
      return this;
    }

    /**
     * @param required {@code true} to refuse a unary call without a key with {@code
     *     INVALID_ARGUMENT}; {@code false} (the default, as AIP-155's request IDs are optional) to
     *     let it through unprotected
     * @return this builder
     */
    public Builder keyRequired(boolean required) {
      this.keyRequired = required;
      return this;
    }

    /**
     * @param principal the principal of every call, for services whose callers all act for one
     *     owner; never {@code null}
     * @return this builder (replaces the resolver with {@link PrincipalResolver#fixed})
     */
    public Builder principal(String principal) {
      Scope.of(principal, "-"); // validates
      this.principals = PrincipalResolver.fixed(principal);
      return this;
    }

    /**
     * @param resolver names each call's caller from its {@link GrpcCall} (for example {@link
     *     GrpcPrincipals#fromContext}); a {@code PrincipalResolver<Object>} (one resolver for every
     *     stack) is accepted too; never {@code null}
     * @return this builder
     * @throws NullPointerException if {@code resolver} is {@code null}
     */
    public Builder principalResolver(PrincipalResolver<? super GrpcCall> resolver) {
      this.principals = Objects.requireNonNull(resolver, "resolver");
      return this;
    }

    /**
     * @param principal the principal of callers the resolver leaves anonymous (default {@value
     *     #DEFAULT_ANONYMOUS_PRINCIPAL}), a valid scope part, never {@code null}
     * @return this builder
     * @throws IllegalArgumentException if it is no valid scope part
     */
    public Builder anonymousPrincipal(String principal) {
      Scope.of(principal, "-");
      this.anonymousPrincipal = principal;
      return this;
    }

    /**
     * @param names the trailers stored with an answer and replayed (default {@code
     *     grpc-status-details-bin}); names ending in {@code -bin} are binary. Replaces the list.
     * @return this builder
     * @throws IllegalArgumentException if a name is no valid metadata key
     */
    public Builder keptTrailers(String... names) {
      List<String> checked = new ArrayList<>();
      for (String name : names) {
        Objects.requireNonNull(name, "trailer name");
        if (name.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
          Metadata.Key.of(name, Metadata.BINARY_BYTE_MARSHALLER);
        } else {
          Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER);
        }
        checked.add(name.toLowerCase(java.util.Locale.ROOT));
      }
      keptTrailers.clear();
      keptTrailers.addAll(checked);
      return this;
    }

    /**
     * @param timeout how long a protected call waits for its handler's answer (default 30 s); at
     *     least the engine's lease, as a handler that answers later has its key released
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder answerTimeout(Duration timeout) {
      this.answerTimeout = positive(timeout, "answerTimeout");
      return this;
    }

    /**
     * @param delay the {@code RetryInfo} delay of a store failure (default 1 s), positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder storeRetryDelay(Duration delay) {
      this.storeRetryDelay = positive(delay, "storeRetryDelay");
      return this;
    }

    /**
     * Protects these unary methods only (and those given a {@link #requestKey}); every other
     * method passes through unprotected. Without this call (the default) every unary method is
     * protected. May be called more than once: the methods add up.
     *
     * @param methods unary methods, never {@code null} (generated code's {@code
     *     getCreateMethod()}); not empty
     * @return this builder
     * @throws NullPointerException if {@code methods} or one of them is {@code null}
     * @throws IllegalArgumentException if {@code methods} is empty, or one of them is a streaming
     *     method (client, server or bidirectional streaming: not supported); the message names the
     *     method and its type
     */
    public Builder protect(MethodDescriptor<?, ?>... methods) {
      Objects.requireNonNull(methods, "methods");
      if (methods.length == 0) {
        throw new IllegalArgumentException("protect(...) needs at least one method");
      }
      Map<String, MethodDescriptor.MethodType> checked = new LinkedHashMap<>();
      for (MethodDescriptor<?, ?> method : methods) {
        Objects.requireNonNull(method, "method");
        requireUnary(method.getFullMethodName(), method.getType(), "protect(...)");
        checked.put(method.getFullMethodName(), method.getType());
      }
      onlyMethods.putAll(checked);
      return this;
    }

    /**
     * Gives a method, or every method of a service, a policy of its own: the engine that runs its
     * calls (another mode, store, retention or lease than the builder's engine) and whether a
     * call without a key is refused. A method's own policy wins over its service's; a method with
     * neither has the builder's engine and {@link #keyRequired}. A method with a policy is
     * protected even when {@link #protect} names other methods only. The key, scope, fingerprint and
     * answers are as for every protected method; the operation is still the full method name, so
     * keys stay valid when a policy is added or changed (a policy that moves a method to another
     * store does not find the keys the old store kept: change stores only when one retention of
     * the old store has passed, or accept that retries within it run again).
     *
     * @param pattern {@code package.Service/Method} (gRPC's full method name) or {@code
     *     package.Service/*} (every unary method of the service), never {@code null}
     * @param engine runs the matching calls, never {@code null}; a transactional engine's handler
     *     writes on {@link GrpcTransactions#connection()}
     * @param keyRequired {@code true} to refuse a matching call without a key ({@code
     *     INVALID_ARGUMENT}, {@code KEY_MISSING}); {@code false} to let it through unprotected
     * @return this builder
     * @throws NullPointerException if {@code pattern} or {@code engine} is {@code null}
     * @throws IllegalArgumentException if the pattern is malformed or has a policy already; at
     *     {@link #build()}, with services given, if it names a streaming method or no method of
     *     them
     */
    public Builder methodPolicy(String pattern, IdempotencyEngine engine, boolean keyRequired) {
      Objects.requireNonNull(pattern, "pattern");
      policies.add(new MethodPolicies.Policy(pattern, engine, keyRequired));
      return this;
    }

    /**
     * The services the interceptor will serve, for the start-up check: {@link #build()} logs their
     * streaming methods, which pass through unprotected, and refuses a method configured as
     * protected ({@link #protect}, {@link #requestKey}) that one of these services serves as a
     * streaming method. The interceptor still has to be applied to the services ({@code
     * ServerInterceptors.intercept(service, interceptor)} or {@code ServerBuilder.intercept}). May
     * be called more than once: the services add up.
     *
     * @param services service definitions, never {@code null}
     * @return this builder
     * @throws NullPointerException if {@code services} or one of them is {@code null}
     */
    public Builder services(ServerServiceDefinition... services) {
      Objects.requireNonNull(services, "services");
      for (ServerServiceDefinition service : services) {
        this.services.add(Objects.requireNonNull(service, "service"));
      }
      return this;
    }

    /**
     * {@link #services(ServerServiceDefinition...)} for generated services ({@code
     * NotesGrpc.NotesImplBase}): each is bound once, here, with {@link BindableService#bindService()}.
     *
     * @param services bindable services, never {@code null}
     * @return this builder
     * @throws NullPointerException if {@code services} or one of them is {@code null}
     */
    public Builder bindableServices(BindableService... services) {
      Objects.requireNonNull(services, "services");
      for (BindableService service : services) {
        this.services.add(Objects.requireNonNull(service, "service").bindService());
      }
      return this;
    }

    /**
     * Builds the interceptor; with {@linkplain #services services} given, checks the methods
     * configured as protected against them and logs (at {@code INFO}, on the {@code
     * System.Logger} named after this class) the streaming methods that pass through unprotected.
     *
     * @return a new interceptor, never {@code null}
     * @throws IllegalArgumentException if a method configured as protected ({@link #protect},
     *     {@link #requestKey}, {@link #methodPolicy}) is a streaming method of one of the services
     *     given, or a method policy names no method of them; the message names the method, its
     *     type, and what is supported
     */
    public IdempotencyServerInterceptor build() {
      Set<String> configured = new LinkedHashSet<>(onlyMethods.keySet());
      configured.addAll(requestKeys.keySet());
      List<String> streaming = new ArrayList<>();
      for (ServerServiceDefinition service : services) {
        for (ServerMethodDefinition<?, ?> definition : service.getMethods()) {
          MethodDescriptor<?, ?> method = definition.getMethodDescriptor();
          if (method.getType() == MethodDescriptor.MethodType.UNARY) {
            continue;
          }
          if (configured.contains(method.getFullMethodName())) {
            requireUnary(method.getFullMethodName(), method.getType(), "the configuration");
          }
          streaming.add(method.getFullMethodName() + " (" + method.getType() + ")");
        }
      }
      Collections.sort(streaming);
      if (!services.isEmpty() && !policies.isEmpty()) {
        policies.check(services);
      }
      if (!streaming.isEmpty()) {
        LOG.log(System.Logger.Level.INFO, "idempotency interceptor: " + streaming.size()
            + " streaming method(s) pass through unprotected (only unary methods are protected): "
            + String.join(", ", streaming));
      }
      return new IdempotencyServerInterceptor(this, streaming);
    }

    private static void requireUnary(String fullMethodName, MethodDescriptor.MethodType type, String where) {
      if (type != MethodDescriptor.MethodType.UNARY) {
        throw new IllegalArgumentException(fullMethodName + " is a " + type + " method and cannot be protected ("
            + where + "): IdempotencyServerInterceptor protects unary methods only, in lease or transactional "
            + "mode; streaming methods pass through unprotected. Leave it out of protect(...) and requestKey(...)");
      }
    }

    private static Duration positive(Duration d, String name) {
      Objects.requireNonNull(d, name);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + " must be positive, was " + d);
      }
      return d;
    }
  }
}
