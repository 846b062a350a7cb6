package dev.idem.docs.fragments;

import dev.idem.core.spi.PrincipalResolver;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The principal resolver bean of docs/spring-boot.md (compiled; the starter's PrincipalSourceTest runs such beans). */
@Configuration(proxyBeanMethods = false)
public class Principals {

  /** The application's own record of who is calling, set by its authentication. */
  public interface Tenants {
    /** @return the authenticated caller's tenant id, or {@code null} for an anonymous caller */
    String current();
  }

  // tag::resolver[]
  @Bean
  PrincipalResolver<Object> principals(Tenants tenants) { // every stack: @Idempotent methods, the filter, gRPC
    return call -> tenants.current(); // what authentication established, never a request field
  }
  // end::resolver[]
}
