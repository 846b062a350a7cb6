package dev.idem.docs.fragments;

import dev.idem.spring.Idempotent;
import org.springframework.stereotype.Service;

/** The {@code @Idempotent} snippet of docs/spring-boot.md (compiled; the starter's tests run such methods). */
@Service
public class Payments {

  /** What a charge answers. */
  public record Receipt(String account, long cents) {}

  // tag::idempotent[]
  @Idempotent(operation = "charge")
  public Receipt charge(@Idempotent.Key String key, String account, long cents) {
    return new Receipt(account, cents);       // runs once per key; a retry gets this Receipt back
  }
  // end::idempotent[]
}
