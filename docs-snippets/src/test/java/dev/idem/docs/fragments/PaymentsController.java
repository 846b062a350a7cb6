package dev.idem.docs.fragments;

import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdempotencyPolicy;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The {@code @IdempotencyPolicy} snippet of docs/spring-boot.md (compiled; the starter's
 * RoutePoliciesTest runs such a handler).
 */
@RestController
public class PaymentsController {

  /** What a payment request carries. */
  public record PaymentRequest(String account, long cents) {}

  /** What a payment answers. */
  public record Payment(String charge, long cents) {}

  // tag::policy[]
  @PostMapping("/payments")
  @IdempotencyPolicy(mode = IdemProperties.Mode.LEASE, store = IdemProperties.StoreType.REDIS, retention = "48h")
  ResponseEntity<Payment> pay(@RequestBody PaymentRequest request) {
    return ResponseEntity.status(201).body(new Payment("ch_1", request.cents())); // the payment API's call
  }
  // end::policy[]
}
