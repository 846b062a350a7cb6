package dev.idem.benchmarks.jmh;

import dev.idem.benchmarks.JsonBodies;
import dev.idem.core.Fingerprint;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Fingerprinting request bodies of the shapes clients send: {@link Fingerprint#ofJson} and the
 * whole request fingerprint ({@link Fingerprint#request()}: method, target, media type, body) of
 *
 * <ul>
 *   <li>{@code small}: a 100-byte object with unsorted members and a number to re-spell;
 *   <li>{@code canonical}: a 1 KiB body that is already in canonical form (sorted members, no
 *       whitespace, canonical numbers and escapes), as a client that canonicalizes sends it;
 *   <li>{@code compact}: the 1 KiB body of {@link FingerprintBenchmark} ({@link JsonBodies}):
 *       unsorted members, escapes and numbers to re-spell, no whitespace;
 *   <li>{@code pretty}: a 1 KiB body with the same kind of content, pretty-printed with two-space
 *       indentation.
 * </ul>
 *
 * Average time per call; run with {@code -prof gc} for the allocation per call.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class FingerprintBodiesBenchmark {

  /** The body's shape, as listed on the class. */
  @Param({"small", "canonical", "compact", "pretty"})
  public String shape;

  private byte[] body;

  @Setup
  public void setUp() {
    body = body(shape);
  }

  @Benchmark
  public Fingerprint ofJson() {
    return Fingerprint.ofJson(body);
  }

  @Benchmark
  public Fingerprint request() {
    return Fingerprint.request()
        .method("POST")
        .target("/orders?dry-run=false")
        .contentType("application/json; charset=utf-8")
        .body(body)
        .build();
  }

  /**
   * @param shape one of the shapes listed on the class
   * @return the body, the same bytes on every call
   * @throws IllegalArgumentException for an unknown shape
   */
  static byte[] body(String shape) {
    switch (shape) {
      case "small":
        return ("{\"currency\":\"EUR\",\"amount\":12.50,\"customer\":\"cus_4821\","
                + "\"note\":\"caf\u00e9 beans, 2x 1 kg\",\"express\":true}")
            .getBytes(StandardCharsets.UTF_8);
      case "canonical":
        for (int size = 1024; ; size++) {
          byte[] canonical = Fingerprint.canonicalJson(JsonBodies.of(size));
          if (canonical.length >= 1024) {
            return canonical;
          }
        }
      case "compact":
        return JsonBodies.of(1024);
      case "pretty":
        for (int size = 400; ; size++) {
          byte[] pretty = pretty(JsonBodies.of(size));
          if (pretty.length >= 1024) {
            return pretty;
          }
        }
      default:
        throw new IllegalArgumentException("unknown shape " + shape);
    }
  }

  /** Re-indents compact JSON: a line per member or element, two spaces per level. */
  static byte[] pretty(byte[] json) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(json.length * 2);
    int depth = 0;
    boolean inString = false;
    for (int i = 0; i < json.length; i++) {
      byte b = json[i];
      if (inString) {
        out.write(b);
        if (b == '\\') {
          out.write(json[++i]);
        } else if (b == '"') {
          inString = false;
        }
        continue;
      }
      switch (b) {
        case '"':
          inString = true;
          out.write(b);
          break;
        case '{':
        case '[':
          out.write(b);
          newline(out, ++depth);
          break;
        case '}':
        case ']':
          newline(out, --depth);
          out.write(b);
          break;
        case ',':
          out.write(b);
          newline(out, depth);
          break;
        case ':':
          out.write(b);
          out.write(' ');
          break;
        default:
          out.write(b);
      }
    }
    out.write('\n');
    return out.toByteArray();
  }

  private static void newline(ByteArrayOutputStream out, int depth) {
    out.write('\n');
    for (int i = 0; i < 2 * depth; i++) {
      out.write(' ');
    }
  }
}
