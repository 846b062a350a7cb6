package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.StoredResponse;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class IdempotencyFilterConfigTest {

  static IdempotencyFilterConfig.Builder builder() {
    return IdempotencyFilterConfig.builder(new InMemoryLeaseStore());
  }

  @Test
  void defaults() {
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore()).build();
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(engine).build();
    // the lease engine runs the handler: a request goes through it and lands in its store
    IdempotentRequest r = IdempotentRequest.ofJson("p", "POST /x", "k", "{}".getBytes(StandardCharsets.UTF_8));
    assertThat(config.engine().attempt(r, ctx -> StoredResponse.of(201, "a")).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(engine.execute(r, ctx -> StoredResponse.of(201, "b")).response().bodyAsString()).isEqualTo("a");
    assertThat(config.routes()).extracting(IdempotencyFilterConfig.Route::toString)
        .containsExactly("POST /** (optional)", "PATCH /** (optional)");
    assertThat(config.maxBodyBytes()).isEqualTo(1024 * 1024);
    assertThat(config.maxResponseBytes()).as("4 MiB").isEqualTo(4_194_304);
    assertThat(config.problemTypeBase()).hasValue(URI.create("urn:idem:problem:"));
    assertThat(IdempotencyFilterConfig.DEFAULT_PROBLEM_TYPE_BASE + "idempotency-key-missing")
        .isEqualTo(IdempotencyFilter.PROBLEM_KEY_MISSING);
    assertThat(config.anonymousPrincipal()).isEqualTo("anonymous");
    assertThat(config.replayedHeaders()).containsExactlyInAnyOrderElementsOf(IdempotencyFilterConfig.DEFAULT_REPLAYED_HEADERS);
    assertThat(config.replayedHeaders().contains("content-type")).isTrue();
    assertThat(config.replayedHeaders().contains("ETAG")).isTrue();
    assertThat(config.replayedHeaders().contains("Set-Cookie")).isFalse();
    assertThat(config.routeFor("POST", "/anything/at/all")).isNotNull();
    assertThat(config.routeFor("PUT", "/x")).isNull();
    assertThat(config.routeFor("post", "/x")).as("methods are case-sensitive").isNull();
  }

  @Test
  void routesMatchInOrderWithExactSingleAndMultiSegmentPatterns() {
    IdempotencyFilterConfig config = builder()
        .required("POST", "/notes")
        .optional("POST", "/notes/*/tags")
        .optional("PATCH", "/notes/**")
        .build();
    assertThat(config.routeFor("POST", "/notes").requirement()).isEqualTo(KeyRequirement.REQUIRED);
    assertThat(config.routeFor("POST", "/notes/")).isNull();
    assertThat(config.routeFor("POST", "/notes/7/tags").operation()).isEqualTo("POST /notes/*/tags");
    assertThat(config.routeFor("POST", "/notes//tags")).isNull();
    assertThat(config.routeFor("POST", "/notes/7/8/tags")).isNull();
    assertThat(config.routeFor("PATCH", "/notes").operation()).isEqualTo("PATCH /notes/**");
    assertThat(config.routeFor("PATCH", "/notes/7/tags/1")).isNotNull();
    assertThat(config.routeFor("PATCH", "/notesX")).isNull();
    assertThat(config.routeFor("PATCH", null)).isNull();
    assertThat(config.routeFor(null, "/notes")).isNull();
  }

  @Test
  void configurationIsImmutable() {
    IdempotencyFilterConfig config = builder().replayedHeaders(List.of("Location")).build();
    assertThatThrownBy(() -> config.routes().clear()).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> config.replayedHeaders().add("ETag")).isInstanceOf(UnsupportedOperationException.class);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "PO ST", "POST\n", "P(ST"})
  void badMethodIsRefused(String method) {
    assertThatThrownBy(() -> builder().required(method, "/x")).isInstanceOf(IllegalArgumentException.class);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "notes", "/a/**/b", "/a*", "/a/b*c", "/a//b", "/a b", "/a?b", "/a#b", "/caf\u00e9"})
  void badPatternIsRefused(String pattern) {
    assertThatThrownBy(() -> builder().required("POST", pattern)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void tooLongOperationIsRefused() {
    assertThatThrownBy(() -> builder().required("POST", "/" + "a".repeat(200)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("199");
  }

  @Test
  void duplicateRouteIsRefused() {
    IdempotencyFilterConfig.Builder b = builder().required("POST", "/x");
    assertThatThrownBy(() -> b.optional("POST", "/x")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void nullsAreRefused() {
    assertThatThrownBy(() -> IdempotencyFilterConfig.builder((LeaseIdempotency) null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> builder().route("POST", "/x", null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> builder().principalResolver(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> builder().replayedHeaders(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void bodyLimitIsChecked() {
    assertThat(builder().maxBodyBytes(0).build().maxBodyBytes()).isZero();
    assertThat(builder().maxBodyBytes(IdempotencyFilterConfig.MAX_BODY_BYTES_LIMIT).build().maxBodyBytes())
        .isEqualTo(256 * 1024 * 1024);
    assertThatThrownBy(() -> builder().maxBodyBytes(-1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder().maxBodyBytes(IdempotencyFilterConfig.MAX_BODY_BYTES_LIMIT + 1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void responseLimitIsChecked() {
    assertThat(builder().maxResponseBytes(0).build().maxResponseBytes()).isZero();
    assertThat(builder().maxResponseBytes(IdempotencyFilterConfig.MAX_RESPONSE_BYTES_LIMIT).build().maxResponseBytes())
        .isEqualTo(64 * 1024 * 1024);
    assertThatThrownBy(() -> builder().maxResponseBytes(-1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxResponseBytes").hasMessageContaining("-1");
    assertThatThrownBy(() -> builder().maxResponseBytes(64 * 1024 * 1024 + 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("between 0 and 67108864");
    assertThatThrownBy(() -> builder().maxResponseBytes(Integer.MAX_VALUE)).isInstanceOf(IllegalArgumentException.class);
    IdempotencyFilterConfig.Builder b = builder().maxResponseBytes(1000);
    assertThatThrownBy(() -> b.maxResponseBytes(-5)).isInstanceOf(IllegalArgumentException.class);
    assertThat(b.build().maxResponseBytes()).as("a refused value leaves the last good one").isEqualTo(1000);
  }

  @ParameterizedTest
  @ValueSource(strings = {"https://api.example.com/problems/", "http://localhost:8080/", "tag:example.com,2024:problems/",
      "urn:example:problems/", "https://example.com/a%20b/", "urn:example:problem:"})
  void problemTypeBaseIsAccepted(String base) {
    IdempotencyFilterConfig config = builder().problemTypeBase(URI.create(base)).build();
    assertThat(config.problemTypeBase()).hasValue(URI.create(base));
    assertThat(config.problemType("idempotency-key-missing")).isEqualTo(base + "idempotency-key-missing");
  }

  @ParameterizedTest
  @ValueSource(strings = {"problems/", "/problems/", "//example.com/problems/", "https://example.com/problems",
      "https://example.com", "https://example.com/p/?q=/", "https://example.com/p/#/", "https://example.com/caf\u00e9/",
      "about:blank", "https://example.com:", "https://example.com/problems:"})
  void badProblemTypeBaseIsRefused(String base) {
    IdempotencyFilterConfig.Builder b = builder();
    assertThatThrownBy(() -> b.problemTypeBase(URI.create(base)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("problemTypeBase").hasMessageContaining(base);
    assertThat(b.build().problemTypeBase()).as("the default stays").hasValue(IdempotencyFilterConfig.DEFAULT_PROBLEM_TYPE_BASE);
  }

  /**
   * Regression: the default problem type URIs pointed at an https domain the project does not own;
   * the default is now a URN that names no host.
   */
  @Test
  void theDefaultProblemTypesNameNoHost() {
    IdempotencyFilterConfig config = builder().build();
    assertThat(config.problemType("idempotency-key-reused")).isEqualTo("urn:idem:problem:idempotency-key-reused");
    assertThat(URI.create(config.problemType("idempotency-key-reused")).getHost()).isNull();
    assertThat(IdempotencyFilter.PROBLEM_KEY_REUSED).isEqualTo(config.problemType("idempotency-key-reused"));
  }

  @Test
  void aboutBlankIsPointedToWhenGivenAsABase() {
    assertThatThrownBy(() -> builder().problemTypeBase(URI.create("about:blank")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("aboutBlankProblemTypes()");
    assertThatThrownBy(() -> builder().problemTypeBase(null))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("aboutBlankProblemTypes()");
  }

  @Test
  void aboutBlankProblemTypesLeavesTheTypeOutUntilABaseIsSetAgain() {
    IdempotencyFilterConfig.Builder b = builder().aboutBlankProblemTypes();
    IdempotencyFilterConfig blank = b.build();
    assertThat(blank.problemTypeBase()).isEqualTo(Optional.empty());
    assertThat(blank.problemType("idempotency-key-missing")).isNull();
    assertThat(blank.toString()).contains("problemTypeBase=about:blank");
    URI mine = URI.create("https://api.example.com/problems/");
    assertThat(b.problemTypeBase(mine).build().problemTypeBase()).hasValue(mine);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "a\tb", "sha256:abc"})
  void badAnonymousPrincipalIsRefused(String principal) {
    assertThatThrownBy(() -> builder().anonymousPrincipal(principal)).isInstanceOf(IllegalArgumentException.class);
  }

  @ParameterizedTest
  @ValueSource(strings = {"Set-Cookie", "set-cookie", "Authorization", "WWW-Authenticate", "Proxy-Authenticate",
      "Connection", "Keep-Alive", "Transfer-Encoding", "TE", "Trailer", "Upgrade", "Proxy-Connection",
      "Content-Length", "Idempotent-Replayed"})
  void neverReplayedHeaderIsRefusedEvenIfConfigured(String name) {
    assertThatThrownBy(() -> builder().replayedHeaders(List.of("Location", name)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(name);
  }

  @Test
  void malformedHeaderNameIsRefused() {
    assertThatThrownBy(() -> builder().replayedHeaders(List.of("Bad Name"))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder().replayedHeaders(List.of(""))).isInstanceOf(IllegalArgumentException.class);
  }
}
