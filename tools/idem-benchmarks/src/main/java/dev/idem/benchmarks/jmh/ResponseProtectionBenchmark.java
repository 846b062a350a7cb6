package dev.idem.benchmarks.jmh;

import dev.idem.benchmarks.JsonBodies;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.ResponseProtection;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * What protection at rest adds per stored response: seal (encode, then AES-256-GCM) and open
 * (authenticate, decrypt, decode) of a 201 with three headers and a 1 KiB JSON body, next to the
 * same calls without a keyring (the plain codec), which {@link StoredResponseCodecBenchmark} also
 * measures.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ResponseProtectionBenchmark {

  private final dev.idem.core.Scope scope = dev.idem.core.Scope.of("alice", "POST /notes");
  private final IdempotencyKey key = IdempotencyKey.of("0191d6b2-7f3e-7c4a-9b1d-2e5f8a6c4d3b");
  private final Fingerprint fingerprint = Fingerprint.ofBytes("{}".getBytes(StandardCharsets.UTF_8));
  private ResponseProtection protection;
  private StoredResponse response;
  private byte[] sealed;
  private byte[] plain;

  @Setup
  public void setUp() {
    byte[] k = new byte[ResponseProtection.KEY_BYTES];
    new SecureRandom().nextBytes(k);
    protection = ResponseProtection.builder().key("k1", k).currentKey("k1").build();
    response = StoredResponse.builder(201)
        .header("Location", "/notes/123456")
        .header("Content-Type", "application/json")
        .header("ETag", "\"5f2b8c1e\"")
        .body(JsonBodies.of(1024))
        .build();
    sealed = protection.seal(scope, key, fingerprint, response);
    plain = ResponseProtection.none().seal(scope, key, fingerprint, response);
  }

  @Benchmark
  public byte[] seal() {
    return protection.seal(scope, key, fingerprint, response);
  }

  @Benchmark
  public StoredResponse open() {
    return protection.open(scope, key, fingerprint, sealed);
  }

  @Benchmark
  public byte[] sealWithoutKeyring() {
    return ResponseProtection.none().seal(scope, key, fingerprint, response);
  }

  @Benchmark
  public StoredResponse openWithoutKeyring() {
    return ResponseProtection.none().open(scope, key, fingerprint, plain);
  }
}
