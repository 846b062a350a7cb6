package dev.idem.docs.steps;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The steps guide's application: {@link RidesController} behind Idem's filter in lease mode. */
@SpringBootApplication
public class RidesApplication {}
