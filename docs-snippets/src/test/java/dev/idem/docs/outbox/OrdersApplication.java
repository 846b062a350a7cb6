package dev.idem.docs.outbox;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The outbox guide's application: {@link OrdersController} behind Idem's filter in transactional mode. */
@SpringBootApplication
public class OrdersApplication {}
