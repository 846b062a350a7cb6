package dev.idem.spring;

import dev.idem.spring.IdemProperties.GrpcMethodPolicy;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What {@link IdemProperties.Grpc} holds (that class, in {@link IdemProperties}, is the type that is
 * bound; this one keeps {@code IdemProperties.java} short). Like every properties class, not
 * thread-safe: bound once at start-up, then only read.
 */
public abstract class IdemGrpcProperties {
  /** Whether to register Idem's global server interceptor when Spring gRPC and idem-grpc are on the class path. */
  private boolean enabled = true;

  /**
   * Whether a unary call without an idempotency-key metadata entry is refused (INVALID_ARGUMENT)
   * rather than passed through unprotected.
   */
  private boolean keyRequired = false;

  /**
   * Methods with a policy of their own, by a name of your choice
   * (idem.grpc.methods.charge.method=orders.Payments/Charge, idem.grpc.methods.charge.mode=lease,
   * idem.grpc.methods.charge.store=redis): each has its own key requirement (default required),
   * mode, store, retention, lease and in-progress answer, unset parts taken from the idem.*
   * properties. A method's own entry wins over its service's (package.Service/*); other unary
   * methods follow idem.grpc.key-required on the application's mode.
   */
  private Map<String, GrpcMethodPolicy> methods = new LinkedHashMap<>();

  public Map<String, GrpcMethodPolicy> getMethods() {
    return methods;
  }

  public void setMethods(Map<String, GrpcMethodPolicy> methods) {
    this.methods = methods;
  }

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public boolean isKeyRequired() {
    return keyRequired;
  }

  public void setKeyRequired(boolean keyRequired) {
    this.keyRequired = keyRequired;
  }
}
