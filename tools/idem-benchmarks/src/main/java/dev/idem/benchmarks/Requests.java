package dev.idem.benchmarks;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;

/** The request every store workload makes: "create a note" with a 200-byte JSON body. */
final class Requests {

  /** The request body: 200 bytes of nested JSON ({@link JsonBodies#of(int)}). */
  static final byte[] BODY = JsonBodies.of(200);

  /** The body as the text stored in the effect row's {@code payload} column. */
  static final String PAYLOAD = new String(BODY, StandardCharsets.UTF_8);

  static final Scope SCOPE = Scope.of("bench-user", "POST /notes");

  /** The body's fingerprint, for records the harness bulk-loads. */
  static final Fingerprint FINGERPRINT = Fingerprint.ofJson(BODY);

  private Requests() {}

  /**
   * What a server does per request before it touches a store: validate the key header and
   * fingerprint the body (RFC 8785 + SHA-256). Every protected workload pays it.
   */
  static IdempotentRequest request(String key) {
    return new IdempotentRequest(SCOPE, IdempotencyKey.of(key), Fingerprint.ofJson(BODY));
  }

  /** The response a create answers: 201, Location and Content-Type, body {@code {"id":N}}. */
  static StoredResponse created(long id) {
    return StoredResponse.builder(201)
        .header("Location", "/notes/" + id)
        .header("Content-Type", "application/json")
        .body("{\"id\":" + id + "}")
        .build();
  }
}
