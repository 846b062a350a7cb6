package dev.idem.spring.grpc;

import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.LeaseStore;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.grpc.GrpcCall;
import dev.idem.grpc.IdempotencyServerInterceptor;
import dev.idem.servlet.KeyRequirement;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdemStoreDecorator;
import dev.idem.spring.internal.IdemPrincipals;
import dev.idem.spring.internal.IdemSettings;
import dev.idem.spring.internal.ModeDecision;
import dev.idem.spring.internal.ModeDecisions;
import dev.idem.spring.internal.PolicyEngines;
import dev.idem.spring.internal.PrincipalIntegration;
import dev.idem.spring.internal.RedisStores;
import dev.idem.spring.purge.IdemPurgeAutoConfiguration;
import io.grpc.BindableService;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.grpc.server.GlobalServerInterceptor;

/**
 * With Spring gRPC (Spring Boot 4.1's own gRPC server, or Spring gRPC 0.x on Spring Boot 3.5) and
 * idem-grpc on the class path, and gRPC services ({@link BindableService} beans) in the application,
 * registers {@link IdempotencyServerInterceptor} as a global server interceptor: every unary method
 * of every service is protected (a call with an {@code idempotency-key} metadata entry runs at most
 * once; one without passes through unless {@code idem.grpc.key-required}), streaming methods pass
 * through and are listed at start-up. Methods (or services) named in {@code idem.grpc.methods.*}
 * have a policy of their own: key requirement, mode, store, retention, lease ({@link
 * PolicyEngines}); a policy that names a streaming method or no method of the application's
 * services stops the start-up. The engine
 * is the HTTP filter's: transactional mode (the handler's writes through Spring's beans join the
 * key's transaction, for handlers that answer on the calling thread) or the lease engine. The
 * principal follows {@code idem.principal} as on HTTP: a {@code PrincipalResolver<GrpcCall>} bean
 * first, else a {@code PrincipalResolver<Object>} bean (called with the {@link GrpcCall}), else Spring Security's authenticated user (which the
 * application's gRPC security must have set when the call starts), else {@code shared}; {@code
 * servlet} has no meaning for gRPC and is refused.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemPurgeAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springframework.grpc.server.GlobalServerInterceptor", "dev.idem.grpc.IdempotencyServerInterceptor",
    "io.grpc.BindableService"})
@ConditionalOnProperty(prefix = "idem.grpc", name = "enabled", havingValue = "true", matchIfMissing = true)
public class IdemGrpcAutoConfiguration {

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  @Bean
  @GlobalServerInterceptor
  @ConditionalOnBean(BindableService.class) // a gRPC server with services: nothing to protect without one
  @ConditionalOnMissingBean(IdempotencyServerInterceptor.class)
  IdempotencyServerInterceptor idemGrpcServerInterceptor(IdemProperties p, ObjectProvider<ModeDecision> mode, LeaseIdempotency lease,
      ObjectProvider<PrincipalResolver<GrpcCall>> grpcResolver, ObjectProvider<PrincipalResolver<Object>> methodResolver,
      ObjectProvider<PrincipalIntegration> integrations, ObjectProvider<BindableService> services,
      ObjectProvider<LeaseStore> store, ObjectProvider<DataSource> dataSource,
      ObjectProvider<RedisStores> redis, ObjectProvider<IdemStoreDecorator> decorators,
      ObjectProvider<PolicyEngines.TransactionalEngines> transactionalEngines, ObjectProvider<IdemListener> listeners) {
    ModeDecision decided = mode.getIfAvailable();
    ModeDecision decision = decided != null ? decided : ModeDecisions.withoutSpringJdbc(p);
    boolean transactional = decision.mode == IdemProperties.Mode.TRANSACTIONAL && decision.engine != null;
    IdempotencyEngine engine = transactional ? decision.engine : lease;
    IdempotencyServerInterceptor.Builder builder = IdempotencyServerInterceptor.builder(engine)
        .keyRequired(p.getGrpc().isKeyRequired())
        .principalResolver(principals(p, grpcResolver.getIfAvailable(), methodResolver.getIfAvailable(),
            integrations.orderedStream().toList()));
    List<String> policyLines = new ArrayList<>();
    if (!p.getGrpc().getMethods().isEmpty()) {
      PolicyEngines engines = new PolicyEngines(p, decision, store.getObject(),
          PolicyEngines.stores(p, "idem.grpc.methods.*.store", dataSource.getIfAvailable(), redis.getIfAvailable(),
              decorators.orderedStream().toList()),
          transactionalEngines.getIfAvailable(), listeners.getIfUnique(() -> IdemListener.NONE));
      for (Map.Entry<String, IdemProperties.GrpcMethodPolicy> e : p.getGrpc().getMethods().entrySet()) {
        String source = "idem.grpc.methods." + e.getKey();
        IdemProperties.GrpcMethodPolicy m = e.getValue();
        String method = m.getMethod();
        if (method == null || method.isBlank()) {
          throw new IdemConfigurationException(source + ".method", "each gRPC method policy names its method by gRPC's full"
              + " method name, \"package.Service/Method\", or every unary method of a service, \"package.Service/*\"", null);
        }
        PolicyEngines.Built built = engines.engine(new PolicyEngines.Policy(source, m.getMode(), m.getStore(), m.getRetention(),
            m.getLease(), m.getInProgress(), m.getMaxWait()));
        boolean required = m.getKey() == KeyRequirement.REQUIRED;
        IdemSettings.configured(source + ".method", () -> builder.methodPolicy(method.strip(), built.engine(), required));
        policyLines.add(method.strip() + " (key " + (required ? "required" : "optional") + "): " + built.words() + " [" + source + "]");
      }
    }
    List<BindableService> bindable = services.orderedStream().toList();
    builder.bindableServices(bindable.toArray(new BindableService[0]));
    IdempotencyServerInterceptor interceptor = IdemSettings.configured(policyLines.isEmpty() ? "idem.grpc" : "idem.grpc.methods",
        builder::build);
    LOG.info("Idem: gRPC unary calls with an idempotency-key ({}) run at most once, {} mode; streaming methods pass through: {}",
        p.getGrpc().isKeyRequired() ? "required" : "optional", transactional ? "transactional" : "lease",
        interceptor.unprotectedStreamingMethods().isEmpty() ? "none" : interceptor.unprotectedStreamingMethods());
    for (String line : policyLines) {
      LOG.info("Idem: gRPC method {}", line);
    }
    return interceptor;
  }

  /** The principal of a call, by the rules of {@code idem.principal}; see the class. */
  static PrincipalResolver<? super GrpcCall> principals(IdemProperties p, @Nullable PrincipalResolver<GrpcCall> grpcBean,
      @Nullable PrincipalResolver<Object> methodBean, List<PrincipalIntegration> integrations) {
    if (grpcBean != null) {
      return grpcBean;
    }
    if (methodBean != null) {
      return methodBean;
    }
    IdemProperties.PrincipalSource source = IdemPrincipals.source(p);
    switch (source) {
      case SHARED:
        return PrincipalResolver.anonymous();
      case SERVLET:
        throw new IdemConfigurationException("idem.principal", "is servlet, which has no meaning for a gRPC call: set"
            + " idem.principal=spring-security or shared, or define a PrincipalResolver<GrpcCall> bean (or set idem.grpc.enabled=false)",
            null);
      default:
        PrincipalIntegration security = IdemPrincipals.find(integrations, IdemProperties.PrincipalSource.SPRING_SECURITY).orElse(null);
        if (security == null) {
          throw source == IdemProperties.PrincipalSource.AUTO ? IdemPrincipals.noSource("the gRPC server interceptor")
              : IdemPrincipals.unavailable(source);
        }
        return (GrpcCall call) -> security.currentPrincipal();
    }
  }
}
