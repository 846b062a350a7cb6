package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.ResponseNotStoredException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.IdempotencyKeyMissingException;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/** Each of Idem's exceptions as the filter answers it; anything else left to Spring MVC. */
class IdemHandlerExceptionResolverTest {

  private final IdempotencyFilterConfig defaults = IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).build();

  private static MockHttpServletResponse resolve(IdempotencyFilterConfig config, Exception e) {
    MockHttpServletResponse response = new MockHttpServletResponse();
    assertThat(new IdemHandlerExceptionResolver(config).resolveException(new MockHttpServletRequest(), response, null, e)).isNotNull();
    assertThat(response.getContentType()).isEqualTo("application/problem+json");
    assertThat(response.getHeader("Cache-Control")).isEqualTo("no-store");
    return response;
  }

  @Test
  void eachRefusalIsTheFiltersProblem() throws Exception {
    IdempotencyKey key = IdempotencyKey.of("k1");
    MockHttpServletResponse reused = resolve(defaults, new IdempotencyKeyReusedException(Scope.of("alice", "charge"), key));
    assertThat(reused.getStatus()).isEqualTo(422);
    assertThat(reused.getContentAsString()).contains("\"type\":\"urn:idem:problem:idempotency-key-reused\"")
        .doesNotContain("alice", "charge");
    // a method's payload is its arguments: not the filter's words for an HTTP request
    assertThat(reused.getContentAsString()).contains("with other arguments").doesNotContain("media type", "body", "target");

    MockHttpServletResponse missing = resolve(defaults, new IdempotencyKeyMissingException("Payments.charge"));
    assertThat(missing.getStatus()).isEqualTo(400);
    assertThat(missing.getContentAsString()).contains("idempotency-key-missing").doesNotContain("Payments");

    MockHttpServletResponse busy = resolve(defaults, new RequestInProgressException(key, Duration.ofSeconds(30)));
    assertThat(busy.getStatus()).isEqualTo(409);
    assertThat(busy.getHeader("Retry-After")).isEqualTo("1");

    MockHttpServletResponse store = resolve(defaults, new IdemStoreException("connection refused to db-7.internal", null));
    assertThat(store.getStatus()).isEqualTo(503);
    assertThat(store.getContentAsString()).contains("store-unavailable", "same key").doesNotContain("db-7");
  }

  @Test
  void theRetryAfterBoundAndAboutBlankComeFromTheFiltersConfiguration() throws Exception {
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(new InMemoryLeaseStore())
        .maxRetryAfter(Duration.ofSeconds(20)).aboutBlankProblemTypes().build();
    MockHttpServletResponse busy = resolve(config, new RequestInProgressException(IdempotencyKey.of("k"), Duration.ofSeconds(12)));
    assertThat(busy.getHeader("Retry-After")).isEqualTo("12");
    assertThat(busy.getContentAsString()).doesNotContain("\"type\"").contains("\"title\":\"Conflict\"");
  }

  @Test
  void otherExceptionsAndCommittedResponsesAreLeftToSpringMvc() throws Exception {
    IdemHandlerExceptionResolver resolver = new IdemHandlerExceptionResolver(defaults);
    assertThat(resolver.resolveException(new MockHttpServletRequest(), new MockHttpServletResponse(), null, new IllegalStateException("x"))).isNull();
    // The HTTP client's unknown outcome of a call the application made: the application's own, as
    // when the client had an exception type of its own (not 503 outcome-unknown, not store-unavailable).
    assertThat(resolver.resolveException(new MockHttpServletRequest(), new MockHttpServletResponse(), null,
        OutcomeUnknownException.clientRetriesExhausted(IdempotencyKey.of("downstream"), 3, 503, "no attempts left", null, null, null)))
        .isNull();
    MockHttpServletResponse committed = new MockHttpServletResponse();
    committed.setCommitted(true);
    assertThat(resolver.resolveException(new MockHttpServletRequest(), committed, null,
        new IdempotencyKeyReusedException(Scope.of("a", "b"), IdempotencyKey.of("k")))).isNull();
  }

  @Test
  void aRepeatOfAMethodWhoseResultWasTooLargeToStoreIs422NotASecondRun() throws Exception {
    StoredResponse record = StoredResponse.builder(201).bodyNotStored(5_000_000).build();
    MockHttpServletResponse tooLarge = resolve(defaults, new ResponseNotStoredException(IdempotencyKey.of("secret-key-1"), record));
    assertThat(tooLarge.getStatus()).isEqualTo(422);
    assertThat(tooLarge.getContentAsString()).contains("response-too-large-to-replay", "status 201").doesNotContain("secret-key-1");
  }

  @Test
  void aResultThatCouldNotBeStoredIs503OutcomeUnknownWithRetryAfterNotStoreUnavailable() throws Exception {
    MockHttpServletResponse unknown = resolve(defaults,
        new OutcomeUnknownException(IdempotencyKey.of("k7"), Duration.ofSeconds(7), null));
    assertThat(unknown.getStatus()).isEqualTo(503);
    assertThat(unknown.getHeader("Retry-After")).isEqualTo("7");
    assertThat(unknown.getContentAsString()).contains("outcome-unknown", "same Idempotency-Key").doesNotContain("store-unavailable");
  }
}
