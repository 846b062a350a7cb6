package dev.idem.benchmarks.jmh;

import dev.idem.benchmarks.JsonBodies;
import dev.idem.core.Fingerprint;
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
 * Fingerprinting a request body: {@link Fingerprint#ofJson} (RFC 8785 canonicalization, then
 * SHA-256) on realistic nested JSON with unsorted members, and {@link Fingerprint#ofBytes} (SHA-256
 * only) on the same bytes for comparison. Sample-time mode, so the report can give the median.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class FingerprintBenchmark {

  /** Body size in bytes: a small create, a typical one, a large document. */
  @Param({"200", "1024", "65536"})
  public int size;

  private byte[] body;

  @Setup
  public void setUp() {
    body = JsonBodies.of(size);
  }

  @Benchmark
  public Fingerprint ofJson() {
    return Fingerprint.ofJson(body);
  }

  @Benchmark
  public Fingerprint ofBytes() {
    return Fingerprint.ofBytes(body);
  }
}
