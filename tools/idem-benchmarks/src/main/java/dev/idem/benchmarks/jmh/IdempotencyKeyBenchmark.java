package dev.idem.benchmarks.jmh;

import dev.idem.core.IdempotencyKey;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/** Validating an idempotency key header: a UUID-shaped key and a key of the maximum 255 characters. */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class IdempotencyKeyBenchmark {

  @Param({"uuid", "max255"})
  public String shape;

  private String value;

  @Setup
  public void setUp() {
    if (shape.equals("uuid")) {
      value = "3f1c9a52-7c1e-4b7e-9d8a-0e6b2f4c1a77";
    } else {
      StringBuilder sb = new StringBuilder(255);
      for (int i = 0; i < 255; i++) {
        sb.append((char) (0x21 + (i * 7) % 94)); // printable ASCII, varied
      }
      value = sb.toString();
    }
  }

  @Benchmark
  public IdempotencyKey of() {
    return IdempotencyKey.of(value);
  }
}
