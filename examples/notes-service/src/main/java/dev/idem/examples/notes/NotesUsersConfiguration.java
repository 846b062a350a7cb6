package dev.idem.examples.notes;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;

/**
 * Users, when {@code notes.users} is set: {@link BasicUsersFilter} runs before Idem's filter, so
 * that with {@code idem.principal=servlet} each user's keys have a scope of their own.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(prefix = "notes", name = "users")
class NotesUsersConfiguration {

  @Bean
  FilterRegistrationBean<BasicUsersFilter> notesBasicUsers(@Value("${notes.users}") String users) {
    FilterRegistrationBean<BasicUsersFilter> registration = new FilterRegistrationBean<>(new BasicUsersFilter(users));
    registration.setName("notesBasicUsers");
    registration.addUrlPatterns("/*");
    // before Idem's filter (Ordered.LOWEST_PRECEDENCE - 100), which reads the principal
    registration.setOrder(Ordered.HIGHEST_PRECEDENCE + 100);
    return registration;
  }
}
