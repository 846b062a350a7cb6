package dev.idem.check;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class JsonTest {

  @Test
  void reorderedAndRespacedKeepsEveryNumberExactlyAndReversesEveryObject() {
    String body = "{\"a\":9007199254740993,\"b\":[{\"x\":1.10,\"y\":\"check\"}],\"c\":1e400}";

    String variant = Json.reorderedAndRespaced(Json.parse(body));

    assertThat(variant).isNotEqualTo(body);
    assertThat(variant.indexOf("\"c\"")).isLessThan(variant.indexOf("\"a\""));
    assertThat(variant.indexOf("\"y\"")).isLessThan(variant.indexOf("\"x\""));
    assertThat(variant).contains("9007199254740993").contains("1.10").contains(" : ");
    assertThat(ToyApi.canonical(Json.parse(variant))).isEqualTo(ToyApi.canonical(Json.parse(body)));
  }

  @Test
  void anAddedNumberMemberIsWrittenAsItsExactLiteral() {
    String body = Json.withNumberMember(Json.parse("{\"title\":\"t\"}"), "n", Checks.BIG_NUMBER);

    assertThat(body).isEqualTo("{\"title\":\"t\",\"n\":" + Checks.BIG_NUMBER + "}");
    assertThat(Json.hasReorderableObject(Json.parse(body))).isTrue();
    assertThat(Json.hasReorderableObject(Json.parse("{\"title\":\"t\"}"))).isFalse();
  }
}
