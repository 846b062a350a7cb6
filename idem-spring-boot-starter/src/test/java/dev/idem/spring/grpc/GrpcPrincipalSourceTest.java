package dev.idem.spring.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.spi.PrincipalResolver;
import dev.idem.grpc.GrpcCall;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.internal.PrincipalIntegration;
import io.grpc.Attributes;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.Status;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The principal of a gRPC call under the starter, by {@code idem.principal}: the same strings as
 * with the resolver types that {@link PrincipalResolver} replaced ({@code GrpcPrincipalResolver}
 * and {@code IdemPrincipalResolver} beans), since they are part of every stored key's scope.
 */
class GrpcPrincipalSourceTest {

  private static final GrpcCall CALL = new GrpcCall(new NoCall(), new Metadata(), Context.ROOT);

  private static PrincipalIntegration security(String user) {
    return new PrincipalIntegration() {
      @Override
      public IdemProperties.PrincipalSource kind() {
        return IdemProperties.PrincipalSource.SPRING_SECURITY;
      }

      @Override
      public String currentPrincipal() {
        return user;
      }
    };
  }

  private static IdemProperties principal(IdemProperties.PrincipalSource source) {
    IdemProperties p = new IdemProperties();
    p.setPrincipal(source);
    return p;
  }

  @Test
  void aGrpcBeanWinsThenTheEveryStackBeanThenSpringSecurityThenShared() {
    IdemProperties auto = principal(IdemProperties.PrincipalSource.AUTO);
    PrincipalResolver<GrpcCall> grpcBean = call -> "svc-" + call.headers().keys().size();
    PrincipalResolver<Object> everyStack = call -> call instanceof GrpcCall ? "tenant-7" : "not a gRPC call";
    assertThat(IdemGrpcAutoConfiguration.principals(auto, grpcBean, everyStack, List.of(security("alice"))).resolve(CALL))
        .isEqualTo("svc-0");
    assertThat(IdemGrpcAutoConfiguration.principals(auto, null, everyStack, List.of(security("alice"))).resolve(CALL))
        .isEqualTo("tenant-7");
    assertThat(IdemGrpcAutoConfiguration.principals(auto, null, null, List.of(security("alice"))).resolve(CALL)).isEqualTo("alice");
    assertThat(IdemGrpcAutoConfiguration.principals(auto, null, null, List.of(security(null))).resolve(CALL)).isNull();
    assertThat(IdemGrpcAutoConfiguration.principals(principal(IdemProperties.PrincipalSource.SHARED), null, null,
        List.of(security("alice"))).resolve(CALL)).as("shared: every caller anonymous").isNull();
  }

  @Test
  void servletHasNoMeaningForGrpcAndTheMessageNamesTheBeanToDefine() {
    assertThatThrownBy(() -> IdemGrpcAutoConfiguration.principals(principal(IdemProperties.PrincipalSource.SERVLET), null, null,
        List.of())).isInstanceOf(IdemConfigurationException.class).hasMessageContaining("PrincipalResolver<GrpcCall> bean");
    assertThatThrownBy(() -> IdemGrpcAutoConfiguration.principals(principal(IdemProperties.PrincipalSource.AUTO), null, null,
        List.of())).isInstanceOf(IdemConfigurationException.class).hasMessageContaining("PrincipalResolver<Object> bean");
  }

  /** A call that is never used: the resolvers under test read only the metadata. */
  private static final class NoCall extends ServerCall<Object, Object> {
    @Override
    public void request(int numMessages) {}

    @Override
    public void sendHeaders(Metadata headers) {}

    @Override
    public void sendMessage(Object message) {}

    @Override
    public void close(Status status, Metadata trailers) {}

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public Attributes getAttributes() {
      return Attributes.EMPTY;
    }

    @Override
    public MethodDescriptor<Object, Object> getMethodDescriptor() {
      throw new UnsupportedOperationException();
    }
  }
}
