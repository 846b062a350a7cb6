package dev.idem.docs.spring;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The Spring Boot quick start's application: {@link NotesController} behind Idem's filter, in transactional mode. */
@SpringBootApplication
public class NotesApplication {}
