package dev.idem.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.testing.Gen;
import dev.idem.core.testing.Properties;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The eight-bytes-at-a-time string scan finds exactly the bytes the byte-by-byte scan finds. */
class CanonicalJsonCheckTest {

  /** Bytes next to the boundaries of "plain": controls, quote, backslash, DEL, non-ASCII. */
  private static final int[] BOUNDARY_BYTES = {
    0x00, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7E, 0x7F, 0x80, 0x81, 0x9F, 0xA0, 0xA2,
    0xDC, 0xFF
  };

  /** A byte, mostly printable ASCII, often one next to a boundary of "plain". */
  private static int chunkByte(SplittableRandom r) {
    return switch (Gen.weighted(r, 6, 1, 1, 1)) {
      case 0 -> Gen.between(r, 0x20, 0x7F);
      case 1 -> Gen.oneOf(r, 0x00, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D);
      case 2 -> Gen.oneOf(r, 0x7E, 0x7F, 0x80, 0x81, 0x9F, 0xA0, 0xA2, 0xDC, 0xFF);
      default -> Gen.between(r, 0, 0xFF);
    };
  }

  /** Up to 40 bytes from {@link #chunkByte}. */
  static byte[] chunk(SplittableRandom r) {
    List<Integer> bytes = Gen.listOf(r, 40, CanonicalJsonCheckTest::chunkByte);
    byte[] out = new byte[bytes.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) (int) bytes.get(i);
    }
    return out;
  }

  /** Any long; a third of them made of eight bytes from {@link #chunkByte}, often all plain. */
  static long word(SplittableRandom r) {
    if (r.nextInt(3) > 0) {
      return Gen.longs(r);
    }
    long x = 0;
    for (int i = 0; i < 8; i++) {
      x = x << 8 | chunkByte(r);
    }
    return x;
  }

  private static boolean plain(int b) {
    return b >= 0x20 && b < 0x80 && b != '"' && b != '\\';
  }

  @Test
  void notPlainIsZeroExactlyWhenAllEightBytesArePlain() {
    // the long boundaries, all-plain words, and each boundary byte at each place among plain ones
    List<Long> edges = new ArrayList<>(Gen.LONG_EDGES);
    edges.add(0x2020202020202020L);
    edges.add(0x7E7E7E7E7E7E7E7EL);
    edges.add(0x2120212021202120L);
    edges.add(0x7F7F7F7F7F7F7F7FL);
    edges.add(0x8080808080808080L);
    for (int place = 0; place < 8; place++) {
      for (int b : BOUNDARY_BYTES) {
        long background = 0x6161616161616161L;
        edges.add(background & ~(0xFFL << (8 * place)) | ((long) b << (8 * place)));
      }
    }
    Properties.forAll(
        "notPlainIsZeroExactlyWhenAllEightBytesArePlain",
        5000,
        CanonicalJsonCheckTest::word,
        edges,
        x -> {
          boolean allPlain = true;
          for (int i = 0; i < 8; i++) {
            allPlain &= plain((int) (x >>> (8 * i)) & 0xFF);
          }
          assertThat(CanonicalJsonCheck.notPlain(x) == 0).isEqualTo(allPlain);
        });
  }

  @Test
  void skipAndCopyStopAtTheFirstByteThatIsNotPlain() {
    // every length to 17 and the longest, stopped by each boundary byte at every place, or not
    List<byte[]> edges = new ArrayList<>();
    for (int length : new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 39,
        40}) {
      for (int stop = 0; stop <= length; stop++) {
        for (int b : BOUNDARY_BYTES) {
          byte[] in = new byte[length];
          for (int i = 0; i < length; i++) {
            in[i] = (byte) ('a' + i % 26);
          }
          if (stop < length) {
            in[stop] = (byte) b;
          }
          edges.add(in);
          if (stop == length) {
            break; // all plain: one is enough
          }
        }
      }
    }
    Properties.forAll(
        "skipAndCopyStopAtTheFirstByteThatIsNotPlain",
        5000,
        CanonicalJsonCheckTest::chunk,
        edges,
        in -> {
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
        });
  }
}
