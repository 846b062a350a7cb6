package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@link Fingerprint#canonicalJson}: the form {@link Fingerprint#ofJson} digests. */
class FingerprintCanonicalJsonTest {

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void sortsMembersDropsWhitespaceAndRespellsNumbersAndEscapes() {
    byte[] json = utf8("{ \"b\": 10E-1, \"a\": [1.50, \"\\u00e9\"] }");
    assertThat(new String(Fingerprint.canonicalJson(json), StandardCharsets.UTF_8)).isEqualTo("{\"a\":[1.5,\"\u00e9\"],\"b\":1}");
  }

  @Test
  void ofJsonIsTheDigestOfTheCanonicalForm() {
    byte[] json = utf8("{\"z\":true,\"amount\":12.50,\"note\":\"caf\\u00e9\"}");
    byte[] canonical = Fingerprint.canonicalJson(json);
    assertThat(Fingerprint.ofJson(json)).isEqualTo(Fingerprint.ofBytes(canonical));
    assertThat(Fingerprint.canonicalJson(canonical)).isEqualTo(canonical);
  }

  @Test
  void refusesWhatOfJsonRefuses() {
    assertThatThrownBy(() -> Fingerprint.canonicalJson(utf8("{\"a\":1,\"a\":2}"))).isInstanceOf(InvalidPayloadException.class);
    assertThatThrownBy(() -> Fingerprint.canonicalJson(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void leavesItsInputAlone() {
    byte[] json = utf8("{\"b\":1,\"a\":2}");
    byte[] copy = json.clone();
    Fingerprint.canonicalJson(json);
    assertThat(json).isEqualTo(copy);
  }
}
