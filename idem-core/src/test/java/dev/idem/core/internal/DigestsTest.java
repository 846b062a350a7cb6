package dev.idem.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import org.junit.jupiter.api.Test;

class DigestsTest {

  @Test
  void sha256HexMatchesTheFipsTestVectors() {
    // FIPS 180-2, appendix B.1 and the empty message
    assertThat(Digests.sha256Hex("abc")).isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assertThat(Digests.sha256Hex(new byte[0])).isEqualTo("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  }

  @Test
  void sha256HexOfAStringHashesItsUtf8Bytes() {
    assertThat(Digests.sha256Hex("é")).isEqualTo(Digests.sha256Hex("é".getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void eachNewDigestStartsFresh() {
    MessageDigest a = Digests.newSha256();
    a.update("a".getBytes(StandardCharsets.UTF_8));
    MessageDigest b = Digests.newSha256();
    b.update("abc".getBytes(StandardCharsets.UTF_8));
    assertThat(Digests.hex(b.digest())).isEqualTo(Digests.sha256Hex("abc"));
  }

  @Test
  void hexWritesTwoLowerCaseDigitsPerByte() {
    assertThat(Digests.hex(new byte[] {0, 10, (byte) 0xff})).isEqualTo("000aff");
    assertThat(Digests.hex(new byte[] {0, 10, (byte) 0xff}, 1, 2)).isEqualTo("0a");
  }
}
