package dev.idem.docs.outbox;

import dev.idem.outbox.Intent;
import dev.idem.spring.outbox.IdemOutbox;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** The Spring Boot snippet of docs/outbox.md; run by {@code OutboxSpringTest}. */
@RestController
public class OrdersController {

  private final JdbcTemplate jdbc;
  private final IdemOutbox outbox;
  private final Inventory inventory;

  OrdersController(JdbcTemplate jdbc, IdemOutbox outbox, Inventory inventory) {
    this.jdbc = jdbc;
    this.outbox = outbox;
    this.inventory = inventory;
  }

  // tag::controller[]
  // idem.required-key-routes=POST /orders; JdbcTemplate and IdemOutbox are beans
  @PostMapping("/orders")
  ResponseEntity<String> create(@RequestBody String item) {
    String id = UUID.randomUUID().toString();
    String json = "{\"id\":\"" + id + "\",\"item\":\"" + item + "\"}";
    jdbc.update("INSERT INTO orders (id, item) VALUES (?, ?)", id, item);   // the key's transaction
    outbox.record(Intent.kafka("orders", id, json.getBytes(StandardCharsets.UTF_8))
        .withHeader("content-type", "application/json"));                 // the same transaction
    inventory.reserve(item);   // throws when out of stock: the order and its message roll back
    return ResponseEntity.status(201).contentType(MediaType.APPLICATION_JSON).body(json);
  }
  // end::controller[]
}
