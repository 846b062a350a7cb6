package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class IdempotencyKeyTest {

  @Test
  void acceptsEveryPrintableAsciiCharacterAndKeepsTheValueUnchanged() {
    StringBuilder all = new StringBuilder();
    for (char c = 0x20; c <= 0x7E; c++) {
      all.append(c);
    }
    assertThat(IdempotencyKey.of(all.toString()).value()).isEqualTo(all.toString());
    assertThat(IdempotencyKey.of(" padded ").value()).isEqualTo(" padded ");
  }

  @Test
  void acceptsOneAndTwoHundredFiftyFiveCharacters() {
    assertThat(IdempotencyKey.of("a").value()).hasSize(1);
    assertThat(IdempotencyKey.of("k".repeat(255)).value()).hasSize(255);
  }

  @Test
  void rejectsEmptyNamingTheRule() {
    assertThatThrownBy(() -> IdempotencyKey.of(""))
        .isInstanceOf(InvalidIdempotencyKeyException.class)
        .hasMessageContaining("empty")
        .extracting(e -> ((InvalidIdempotencyKeyException) e).rule())
        .isEqualTo("empty");
  }

  @Test
  void rejectsTwoHundredFiftySixCharactersNamingTheLimit() {
    assertThatThrownBy(() -> IdempotencyKey.of("k".repeat(256)))
        .isInstanceOf(InvalidIdempotencyKeyException.class)
        .hasMessageContaining("too long")
        .hasMessageContaining("255")
        .extracting(e -> ((InvalidIdempotencyKeyException) e).rule())
        .isEqualTo("too-long");
  }

  @ParameterizedTest
  @ValueSource(strings = {"a\u0000b", "tab\there", "new\nline", "cr\r", "del\u007f", "caf\u00e9", "emoji\ud83d\ude00", "\u0085"})
  void rejectsControlAndNonAsciiCharactersNamingTheCharacterAndIndex(String key) {
    assertThatThrownBy(() -> IdempotencyKey.of(key))
        .isInstanceOf(InvalidIdempotencyKeyException.class)
        .hasMessageContaining("printable US-ASCII")
        .hasMessageContaining("U+")
        .hasMessageContaining("at index")
        .extracting(e -> ((InvalidIdempotencyKeyException) e).rule())
        .isEqualTo("character");
  }

  @Test
  void customMaximumIsEnforcedAndValidated() {
    assertThatThrownBy(() -> IdempotencyKey.of("abcdef", 5)).isInstanceOf(InvalidIdempotencyKeyException.class);
    assertThat(IdempotencyKey.of("abcde", 5).value()).isEqualTo("abcde");
    assertThatThrownBy(() -> IdempotencyKey.of("a", 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> IdempotencyKey.of("a", 256)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void nullIsANullPointerException() {
    assertThatThrownBy(() -> IdempotencyKey.of(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void equalityIsByValueAndCaseSensitive() {
    assertThat(IdempotencyKey.of("abc")).isEqualTo(IdempotencyKey.of("abc")).hasSameHashCodeAs(IdempotencyKey.of("abc"));
    assertThat(IdempotencyKey.of("abc")).isNotEqualTo(IdempotencyKey.of("ABC"));
  }

  @Test
  void scopeRejectsEmptyLongAndControlParts() {
    assertThat(Scope.of("alice", "POST /notes").principal()).isEqualTo("alice");
    assertThatThrownBy(() -> Scope.of("", "op")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("principal");
    assertThatThrownBy(() -> Scope.of("p", "x".repeat(201))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("operation");
    assertThatThrownBy(() -> Scope.of("a\u0000b", "op")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("control");
    assertThatThrownBy(() -> Scope.of(null, "op")).isInstanceOf(NullPointerException.class);
  }

  @Test
  void scopeWithAnUnpairedSurrogateIsRejectedSoItCannotCollideWithAQuestionMark() {
    assertThatThrownBy(() -> Scope.of("user-\uD800", "POST /x"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unpaired surrogate");
    assertThatThrownBy(() -> Scope.of("user", "POST /x\uDC00")).isInstanceOf(IllegalArgumentException.class);
    assertThat(Scope.of("user-\uD83D\uDE00", "POST /x").principal()).isEqualTo("user-\uD83D\uDE00");
  }
}
