package dev.idem.docs.steps;

import dev.idem.core.LeaseContext;
import dev.idem.core.StoredResponse;
import dev.idem.core.steps.StepOperation;
import dev.idem.jdbc.steps.JdbcStepOperations;
import dev.idem.servlet.IdempotencyFilter;
import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.util.Map;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** The snippets of docs/steps.md for Spring Boot; run by {@code StepsSpringTest}. */
@RestController
public class RidesController {

  private final JdbcStepOperations steps;
  private final StepOperation ride;

  RidesController(JdbcStepOperations steps, Payments payments) {
    this.steps = steps;
    this.ride = (s, input) -> {
      String rider = new String(input, StandardCharsets.UTF_8);
      String rideId = s.local("ride", c -> {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO rides (rider) VALUES (?)")) {
          ps.setString(1, rider);
          ps.executeUpdate();
        }
        return rider + "-ride";
      });
      String charge = s.foreign("charge", key -> payments.charge(key.value(), rider, 1250));
      return StoredResponse.builder(201).header("Content-Type", "application/json")
          .body("{\"ride\":\"" + rideId + "\",\"charge\":\"" + charge + "\"}").build();
    };
  }

  // tag::controller[]
  // idem.mode=lease, idem.required-key-routes=POST /rides; JdbcStepOperations is the starter's bean
  @PostMapping("/rides")
  ResponseEntity<byte[]> create(HttpServletRequest request, @RequestBody byte[] body) throws Exception {
    LeaseContext claim = IdempotencyFilter.leaseContext(request).orElseThrow();
    // the steps run under the filter's claim; a retry with the same key resumes after the last one
    StoredResponse answer = steps.runClaimed(claim, body, ride);
    return ResponseEntity.status(answer.status()).contentType(MediaType.APPLICATION_JSON).body(answer.body());
  }
  // end::controller[]

  // tag::completer[]
  // with @EnableScheduling: finish rides whose caller gave up after a step
  @org.springframework.scheduling.annotation.Scheduled(fixedDelay = 5_000)
  void finishAbandonedRides() {
    steps.completeAbandoned(Map.of("POST /rides", ride), 100); // the filter's operation name
  }
  // end::completer[]
}
