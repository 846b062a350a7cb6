package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.idem.core.Fingerprint;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** CSV writing, and the JSON bodies the fingerprint benchmarks and the store workloads send. */
class CsvAndBodiesTest {

  @Test
  void csvQuotesOnlyWhatNeedsItAndFormatsNumbersTheSameEverywhere(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("sub/out.csv");
    Csv.write(file, List.of("name", "value", "note"), List.of(
        Arrays.asList("plain", 1234.5678, null),
        Arrays.asList("a,b", Double.NaN, "say \"hi\"\nbye"),
        Arrays.asList("n", 42L, "")));

    assertEquals("name,value,note\r\n"
        + "plain,1234.568,\r\n"
        + "\"a,b\",,\"say \"\"hi\"\"\nbye\"\r\n"
        + "n,42,\r\n", Files.readString(file, StandardCharsets.UTF_8));
  }

  @Test
  void bodiesHaveTheExactSizeAreValidJsonAndNeedCanonicalization() {
    for (int size : new int[] {200, 1024, 65536}) {
      byte[] body = JsonBodies.of(size);
      assertEquals(size, body.length);
      assertArrayEquals(body, JsonBodies.of(size), "deterministic");
      // valid RFC 8259 JSON that RFC 8785 rewrites (members reordered, escapes and numbers respelled)
      assertNotEquals(Fingerprint.ofBytes(body), Fingerprint.ofJson(body));
    }
  }
}
