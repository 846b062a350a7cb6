package dev.idem.benchmarks.jmh;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idem.benchmarks.JsonBodies;
import dev.idem.core.Fingerprint;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The bodies of {@link FingerprintBodiesBenchmark} have the shapes and sizes its Javadoc states. */
class FingerprintBodiesBenchmarkTest {

  @Test
  void canonicalBodyIsOneKibibyteAndAlreadyCanonical() {
    byte[] body = FingerprintBodiesBenchmark.body("canonical");
    assertTrue(body.length >= 1024 && body.length < 1100, "length " + body.length);
    assertArrayEquals(body, Fingerprint.canonicalJson(body));
  }

  @Test
  void compactAndPrettyBodiesAreOneKibibyteAndNotCanonical() {
    for (String shape : new String[] {"compact", "pretty"}) {
      byte[] body = FingerprintBodiesBenchmark.body(shape);
      assertTrue(body.length >= 1024 && body.length < 1100, shape + " length " + body.length);
      assertFalse(Arrays.equals(body, Fingerprint.canonicalJson(body)), shape);
    }
  }

  @Test
  void prettyPrintingChangesOnlyWhitespace() {
    byte[] compact = JsonBodies.of(600);
    byte[] pretty = FingerprintBodiesBenchmark.pretty(compact);
    assertTrue(pretty.length > compact.length);
    assertArrayEquals(Fingerprint.canonicalJson(compact), Fingerprint.canonicalJson(pretty));
  }

  @Test
  void smallBodyIsAboutOneHundredBytesAndNotCanonical() {
    byte[] body = FingerprintBodiesBenchmark.body("small");
    assertEquals(100, body.length);
    assertFalse(Arrays.equals(body, Fingerprint.canonicalJson(body)));
  }
}
