package dev.idem.benchmarks.jmh;

import dev.idem.benchmarks.JsonBodies;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.StoredResponseCodec;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The codec the stores use for a response's bytes: encode and decode a 201 with three headers and
 * a 1 KiB JSON body.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class StoredResponseCodecBenchmark {

  private StoredResponse response;
  private byte[] encoded;

  @Setup
  public void setUp() {
    response = StoredResponse.builder(201)
        .header("Location", "/notes/123456")
        .header("Content-Type", "application/json")
        .header("ETag", "\"5f2b8c1e\"")
        .body(JsonBodies.of(1024))
        .build();
    encoded = StoredResponseCodec.encode(response);
  }

  @Benchmark
  public byte[] encode() {
    return StoredResponseCodec.encode(response);
  }

  @Benchmark
  public StoredResponse decode() {
    return StoredResponseCodec.decode(encoded);
  }
}
