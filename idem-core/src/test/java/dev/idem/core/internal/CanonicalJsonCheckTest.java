package dev.idem.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/** The eight-bytes-at-a-time string scan finds exactly the bytes the byte-by-byte scan finds. */
class CanonicalJsonCheckTest {

  @Provide
  Arbitrary<byte[]> chunks() {
    Arbitrary<Integer> bytes =
        Arbitraries.frequencyOf(
            Tuple.of(6, Arbitraries.integers().between(0x20, 0x7F)),
            Tuple.of(1, Arbitraries.of(0x00, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D)),
            Tuple.of(1, Arbitraries.of(0x7E, 0x7F, 0x80, 0x81, 0x9F, 0xA0, 0xA2, 0xDC, 0xFF)),
            Tuple.of(1, Arbitraries.integers().between(0, 0xFF)));
    return bytes
        .array(Integer[].class)
        .ofMinSize(0)
        .ofMaxSize(40)
        .map(
            a -> {
              byte[] out = new byte[a.length];
              for (int i = 0; i < a.length; i++) {
                out[i] = (byte) (int) a[i];
              }
              return out;
            });
  }

  private static boolean plain(int b) {
    return b >= 0x20 && b < 0x80 && b != '"' && b != '\\';
  }

  @Property(tries = 5000)
  void notPlainIsZeroExactlyWhenAllEightBytesArePlain(@ForAll long x) {
    boolean allPlain = true;
    for (int i = 0; i < 8; i++) {
      allPlain &= plain((int) (x >>> (8 * i)) & 0xFF);
    }
    assertThat(CanonicalJsonCheck.notPlain(x) == 0).isEqualTo(allPlain);
  }

  @Property(tries = 5000)
  void skipAndCopyStopAtTheFirstByteThatIsNotPlain(@ForAll("chunks") byte[] in) {
    int expected = 0;
    while (expected < in.length && plain(in[expected] & 0xFF)) {
      expected++;
    }
    assertThat(CanonicalJsonCheck.skipPlain(in, 0, in.length)).isEqualTo(expected);
    byte[] out = new byte[in.length + 3];
    assertThat(CanonicalJsonCheck.copyPlain(in, 0, in.length, out, 3)).isEqualTo(expected);
    for (int i = 0; i < expected; i++) {
      assertThat(out[3 + i]).isEqualTo(in[i]);
    }
  }
}
