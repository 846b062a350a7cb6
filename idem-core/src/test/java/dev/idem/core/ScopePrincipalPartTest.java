package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** {@link Scope#principalPart}: the mapping every adapter uses from a resolved name to a scope part. */
class ScopePrincipalPartTest {

  private static final String ANONYMOUS = "anonymous";

  @Test
  void noNameIsTheAnonymousPrincipal() {
    assertThat(Scope.principalPart(null, ANONYMOUS)).isEqualTo(ANONYMOUS);
    assertThat(Scope.principalPart("", ANONYMOUS)).isEqualTo(ANONYMOUS);
  }

  @Test
  void aValidNameIsKeptAsItIs() {
    assertThat(Scope.principalPart("alice", ANONYMOUS)).isEqualTo("alice");
    assertThat(Scope.principalPart("x".repeat(Scope.MAX_PART_LENGTH), ANONYMOUS)).hasSize(Scope.MAX_PART_LENGTH);
  }

  @Test
  void namesThatAreNoValidPartAreHashedAndStayApart() {
    String tooLong = "x".repeat(Scope.MAX_PART_LENGTH + 1);
    String control = "al\u0000ice";
    String loneSurrogate = "al\ud800ice";
    String otherSurrogate = "al\ud801ice";
    for (String name : new String[] {tooLong, control, loneSurrogate, otherSurrogate}) {
      String part = Scope.principalPart(name, ANONYMOUS);
      assertThat(part).matches("sha256:[0-9a-f]{64}");
      Scope.of(part, "POST /x"); // a valid part
    }
    assertThat(Scope.principalPart(loneSurrogate, ANONYMOUS)).isNotEqualTo(Scope.principalPart(otherSurrogate, ANONYMOUS));
  }

  @Test
  void theAnonymousNameAndHashLikeNamesAreHashedSoTheMappingStaysOneToOne() {
    String hashedTooLong = Scope.principalPart("x".repeat(Scope.MAX_PART_LENGTH + 1), ANONYMOUS);
    assertThat(Scope.principalPart(ANONYMOUS, ANONYMOUS)).startsWith("sha256:").isNotEqualTo(ANONYMOUS);
    assertThat(Scope.principalPart(hashedTooLong, ANONYMOUS)).startsWith("sha256:").isNotEqualTo(hashedTooLong);
  }

  @Test
  void aHashedNameIsTheSha256OfItsUtf16CodeUnitsBigEndian() throws Exception {
    // stored records carry this part: its format must not change between versions
    byte[] digest = MessageDigest.getInstance("SHA-256").digest(ANONYMOUS.getBytes(StandardCharsets.UTF_16BE));
    assertThat(Scope.principalPart(ANONYMOUS, ANONYMOUS)).isEqualTo("sha256:" + HexFormat.of().formatHex(digest));
  }

  @Test
  void theSameNameGivesTheSamePart() {
    String name = "x".repeat(Scope.MAX_PART_LENGTH + 7);
    assertThat(Scope.principalPart(name, ANONYMOUS)).isEqualTo(Scope.principalPart(name, ANONYMOUS));
  }

  @Test
  void anAnonymousPrincipalIsRequired() {
    assertThatThrownBy(() -> Scope.principalPart("alice", null)).isInstanceOf(NullPointerException.class);
  }
}
