package dev.idem.docs;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.steps.StepOperation;
import dev.idem.jdbc.steps.JdbcStepOperations;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;

/** The snippets of docs/steps.md; run by {@link StepsSnippetsTest} on SQLite. */
final class StepsSnippets {

  /** A payment service that honours idempotency keys: one charge per key. */
  interface Payments {
    String charge(String idempotencyKey, String rider, long cents) throws Exception;
  }

  private StepsSnippets() {}

  static StepOperation rideOperation(Payments payments) {
    // tag::operation[]
    StepOperation ride = (steps, input) -> {
      String rider = new String(input, StandardCharsets.UTF_8);
      // 1. local: one transaction with the ride row and the step's recovery point
      String rideId = steps.local("ride", c -> {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO rides (rider) VALUES (?)")) {
          ps.setString(1, rider);
          ps.executeUpdate();
        }
        return rider + "-ride";
      });
      // 2. foreign: the payment service gets a key derived from this operation's key and "charge"
      String charge = steps.foreign("charge", key -> payments.charge(key.value(), rider, 1250));
      // 3. local: the receipt message, written in its own transaction (an outbox enqueue goes here)
      steps.local("receipt", c -> {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO receipts (ride, charge) VALUES (?, ?)")) {
          ps.setString(1, rideId);
          ps.setString(2, charge);
          ps.executeUpdate();
        }
        return "sent";
      });
      return StoredResponse.builder(201).header("Content-Type", "application/json")
          .body("{\"ride\":\"" + rideId + "\",\"charge\":\"" + charge + "\"}").build();
    };
    // end::operation[]
    return ride;
  }

  static Outcome run(DataSource dataSource, StepOperation ride, String rider, String key) throws Exception {
    // tag::run[]
    JdbcStepOperations operations = JdbcStepOperations.builder(dataSource)  // tables idem_keys, idem_steps
        .lease(Duration.ofSeconds(30))                                      // a stalled run is resumed after this
        .build();
    IdempotentRequest request = new IdempotentRequest(Scope.of(rider, "POST /rides"), IdempotencyKey.of(key),
        Fingerprint.ofJson(("{\"rider\":\"" + rider + "\"}").getBytes(StandardCharsets.UTF_8)));
    Outcome outcome = operations.execute(request, rider.getBytes(StandardCharsets.UTF_8), ride);
    // a retry with the same key resumes after the last recorded step, or replays the final response
    // end::run[]
    return outcome;
  }

  static int completer(JdbcStepOperations operations, StepOperation ride) {
    // tag::completer[]
    // on a schedule (every few seconds): finish rides whose caller gave up after a step
    int finished = operations.completeAbandoned(Map.of("POST /rides", ride), 100);
    // end::completer[]
    return finished;
  }
}
