package dev.idem.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;

/**
 * A test application's configuration with Spring Boot's auto-configuration but not Spring
 * Security's: Spring Security is on the starter's test class path (for the principal tests), and
 * these applications have no users. Lists the auto-configurations of both Spring Boot lines (the
 * names of the other line are ignored), so that the same test runs on 3.5 and on 4, and of both web
 * stacks: Spring MVC's and WebFlux's ({@code spring.main.web-application-type=reactive}).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@SpringBootConfiguration
@EnableAutoConfiguration(excludeName = {
    "org.springframework.boot.autoconfigure.security.servlet.SecurityAutoConfiguration",
    "org.springframework.boot.autoconfigure.security.servlet.UserDetailsServiceAutoConfiguration",
    "org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration",
    "org.springframework.boot.security.autoconfigure.UserDetailsServiceAutoConfiguration",
    "org.springframework.boot.security.autoconfigure.web.servlet.ServletWebSecurityAutoConfiguration",
    "org.springframework.boot.autoconfigure.security.reactive.ReactiveSecurityAutoConfiguration",
    "org.springframework.boot.autoconfigure.security.reactive.ReactiveUserDetailsServiceAutoConfiguration",
    "org.springframework.boot.security.autoconfigure.web.reactive.ReactiveWebSecurityAutoConfiguration",
    "org.springframework.boot.security.autoconfigure.ReactiveUserDetailsServiceAutoConfiguration"})
public @interface AppWithoutSecurity {}
