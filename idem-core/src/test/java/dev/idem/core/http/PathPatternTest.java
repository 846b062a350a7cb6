package dev.idem.core.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** {@link PathPattern}: what a route's path pattern matches, and the patterns it refuses. */
class PathPatternTest {

  @Test
  void exactSingleSegmentAndFinalMultiSegmentPatternsMatch() {
    assertThat(PathPattern.compile("/notes").matches("/notes")).isTrue();
    assertThat(PathPattern.compile("/notes").matches("/notes/1")).isFalse();
    assertThat(PathPattern.compile("/notes/*/tags").matches("/notes/42/tags")).isTrue();
    assertThat(PathPattern.compile("/notes/*/tags").matches("/notes/42/43/tags")).isFalse();
    assertThat(PathPattern.compile("/notes/**").matches("/notes")).isTrue();
    assertThat(PathPattern.compile("/notes/**").matches("/notes/1/tags")).isTrue();
  }

  /**
   * A route written with a path variable in Spring's or OpenAPI's syntax ({@code POST
   * /orders/{id}/lines}) was accepted and compared literally: it matched no real request, so
   * requests the route was meant to cover were left with the default policy, their key optional.
   */
  @Test
  void aPathVariableInBracesWasTakenLiterallyAndNeverMatched() {
    assertThatThrownBy(() -> PathPattern.compile("/orders/{id}/lines"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("path variables such as {id}")
        .hasMessageContaining("/orders/*/lines")
        .hasMessageContaining("index 8");
    assertThatThrownBy(() -> PathPattern.compile("/orders/{id:\\d+}"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("/orders/*");
    assertThatThrownBy(() -> PathPattern.compile("/files/{*path}"))
        .as("a catch-all variable is the rest of the path, never one segment")
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("(/files/**)");
    assertThatThrownBy(() -> PathPattern.compile("/orders/{id:[0-9]{3}}"))
        .as("no suggestion that still has a brace")
        .isInstanceOf(IllegalArgumentException.class).hasMessageNotContaining("(/orders/*");
    assertThatThrownBy(() -> PathPattern.compile("/orders/id}"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'}'");
  }

  @Test
  void otherMalformedPatternsAreRefusedWithTheirReason() {
    assertThatThrownBy(() -> PathPattern.compile("notes")).hasMessageContaining("must start with '/'");
    assertThatThrownBy(() -> PathPattern.compile("/notes//x")).hasMessageContaining("empty segment");
    assertThatThrownBy(() -> PathPattern.compile("/no*tes")).hasMessageContaining("whole segment");
    assertThatThrownBy(() -> PathPattern.compile("/**/x")).hasMessageContaining("last segment");
    assertThatThrownBy(() -> PathPattern.compile("/notes?x=1")).hasMessageContaining("invalid character");
  }
}
