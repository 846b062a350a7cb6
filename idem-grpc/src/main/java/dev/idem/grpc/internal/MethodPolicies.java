package dev.idem.grpc.internal;

import dev.idem.core.IdempotencyEngine;
import io.grpc.MethodDescriptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The methods with a policy of their own: an engine and a key requirement per method ({@code
 * package.Service/Method}) or per service ({@code package.Service/*}). A method's own entry wins
 * over its service's; a method with neither has the interceptor's defaults. Built once (not
 * thread-safe while built), then read by every call (a {@link #frozenCopy()} is immutable).
 */
public final class MethodPolicies {

  /**
   * One policy.
   *
   * @param pattern as written, {@code package.Service/Method} or {@code package.Service/*}
   * @param engine runs the matching calls
   * @param keyRequired whether a matching call without a key is refused
   */
  public record Policy(String pattern, IdempotencyEngine engine, boolean keyRequired) {
    public Policy {
      Objects.requireNonNull(pattern, "pattern");
      Objects.requireNonNull(engine, "engine");
    }
  }

  private Map<String, Policy> byMethod = new LinkedHashMap<>();
  private Map<String, Policy> byService = new LinkedHashMap<>();

  /**
   * @param policy a policy; its pattern is checked here
   * @throws IllegalArgumentException if the pattern is malformed or was given a policy before
   */
  public void add(Policy policy) {
    String pattern = policy.pattern();
    int slash = pattern.indexOf('/');
    String service = slash < 0 ? "" : pattern.substring(0, slash);
    String method = slash < 0 ? "" : pattern.substring(slash + 1);
    if (slash <= 0 || method.isEmpty() || method.indexOf('/') >= 0 || service.indexOf('*') >= 0
        || (method.indexOf('*') >= 0 && !method.equals("*")) || !pattern.strip().equals(pattern)) {
      throw new IllegalArgumentException("a method policy names a method as \"package.Service/Method\" or every method"
          + " of a service as \"package.Service/*\" (gRPC's full method name); got \"" + pattern + "\"");
    }
    Map<String, Policy> target = method.equals("*") ? byService : byMethod;
    String name = method.equals("*") ? service : pattern;
    if (target.putIfAbsent(name, policy) != null) {
      throw new IllegalArgumentException("the method policy \"" + pattern + "\" is given twice: one policy per method or service");
    }
  }

  /** @return whether no policy was added */
  public boolean isEmpty() {
    return byMethod.isEmpty() && byService.isEmpty();
  }

  /**
   * @param fullMethodName {@code package.Service/Method}
   * @return the method's own policy, else its service's, else {@code null}
   */
  public @Nullable Policy find(String fullMethodName) {
    Policy own = byMethod.get(fullMethodName);
    if (own != null) {
      return own;
    }
    if (byService.isEmpty()) {
      return null;
    }
    String service = MethodDescriptor.extractFullServiceName(fullMethodName);
    return service == null ? null : byService.get(service);
  }

  /** @return whether a policy names this method or its service */
  public boolean covers(String fullMethodName) {
    return find(fullMethodName) != null;
  }

  /**
   * Checks the policies against the services the interceptor will serve: a method policy that
   * names a streaming method, or a pattern that names no method of these services.
   *
   * @param services the services, not empty
   * @throws IllegalArgumentException naming the pattern and what is wrong with it
   */
  public void check(List<ServerServiceDefinition> services) {
    Map<String, MethodDescriptor.MethodType> methods = new LinkedHashMap<>();
    List<String> serviceNames = new ArrayList<>();
    for (ServerServiceDefinition service : services) {
      serviceNames.add(service.getServiceDescriptor().getName());
      for (ServerMethodDefinition<?, ?> definition : service.getMethods()) {
        MethodDescriptor<?, ?> m = definition.getMethodDescriptor();
        methods.put(m.getFullMethodName(), m.getType());
      }
    }
    for (Policy policy : byMethod.values()) {
      MethodDescriptor.MethodType type = methods.get(policy.pattern());
      if (type == null) {
        throw new IllegalArgumentException("the method policy \"" + policy.pattern() + "\" names no method of the services"
            + " served (" + String.join(", ", serviceNames) + "): check the full method name, package.Service/Method");
      }
      if (type != MethodDescriptor.MethodType.UNARY) {
        throw new IllegalArgumentException(policy.pattern() + " is a " + type + " method and cannot be given a method policy:"
            + " only unary methods are protected, in lease or transactional mode; streaming methods pass through unprotected");
      }
    }
    for (Map.Entry<String, Policy> e : byService.entrySet()) {
      boolean unary = methods.entrySet().stream().anyMatch(m -> e.getKey().equals(MethodDescriptor.extractFullServiceName(m.getKey()))
          && m.getValue() == MethodDescriptor.MethodType.UNARY);
      if (!unary) {
        throw new IllegalArgumentException("the method policy \"" + e.getValue().pattern() + "\" names no unary method of the"
            + " services served (" + String.join(", ", serviceNames) + "): check the service's full name, package.Service");
      }
    }
  }

  /**
   * @return an unmodifiable copy, for an interceptor: this one stays open to more policies, which
   *     the copy does not see
   */
  public MethodPolicies frozenCopy() {
    MethodPolicies copy = new MethodPolicies();
    copy.byMethod = Collections.unmodifiableMap(new LinkedHashMap<>(byMethod));
    copy.byService = Collections.unmodifiableMap(new LinkedHashMap<>(byService));
    return copy;
  }

  /** @return every policy, methods first, in the order given; for logs */
  public List<Policy> all() {
    List<Policy> all = new ArrayList<>(byMethod.values());
    all.addAll(byService.values());
    return all;
  }
}
