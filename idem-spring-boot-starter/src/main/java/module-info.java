/**
 * Idem for Spring Boot: the auto-configuration behind the {@code idem.*} properties and the API an
 * application uses directly ({@code @Idempotent}, {@code IdempotentCalls}, the listeners'
 * factories in {@code .kafka} and {@code .rabbit}). One package per concern ({@code
 * dev.idem.spring.web}, {@code .method}, {@code .kafka}, ...), each with its public
 * auto-configuration (so that an application can exclude it) and its helpers package-private;
 * helpers that several concerns share are in {@code dev.idem.spring.internal}, which is not
 * exported. Every package is open: Spring reads the package-private configurations, bean methods
 * and properties reflectively and proxies them, which on the module path needs the package open.
 * Every library the starter configures only when it is present is {@code requires static}: the
 * application brings the ones it uses.
 *
 * <p>Two of those optional libraries have no module name of their own, so on the module path they
 * are the automatic modules that their file names give, and Maven's compiler plugin warns of them
 * ("Required filename-based automodules detected"): kafka-clients ({@code kafka.clients}) and
 * Spring gRPC 0.x for Spring Boot 3.5 ({@code spring.grpc.core}).
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.idem.spring {
  requires transitive dev.idem.core;
  requires transitive dev.idem.jdbc;
  requires transitive dev.idem.servlet;
  requires transitive spring.boot;
  requires transitive spring.boot.autoconfigure;
  requires transitive spring.context;
  requires transitive spring.core; // DataSize in IdemProperties
  requires transitive spring.beans; // ObjectProvider in bean methods
  requires transitive spring.aop; // IdempotentMethodInterceptor is an aopalliance MethodInterceptor
  requires org.slf4j;
  requires static transitive org.jspecify;

  // optional: configured only when present; the application brings the ones it uses
  requires static dev.idem.redis;
  requires static transitive dev.idem.outbox; // IdemOutbox, the listeners' handlers
  requires static transitive dev.idem.rabbitmq; // IdemRabbitListeners takes its DeadLetter
  requires static transitive dev.idem.kafka; // IdemKafkaListener wraps a KafkaRecordHandler
  requires static dev.idem.grpc;
  requires static dev.idem.webflux;
  requires static dev.idem.r2dbc;
  requires static r2dbc.spi;
  requires static reactor.core;
  requires static spring.tx;
  requires static spring.r2dbc;
  requires static spring.jdbc;
  requires static spring.orm;
  requires static spring.web;
  requires static spring.webmvc;
  requires static spring.security.core;
  requires static transitive spring.amqp; // IdemRabbitListener takes a Message
  requires static spring.rabbit;
  requires static transitive com.rabbitmq.client; // and a Channel
  requires static transitive spring.kafka; // IdemKafkaListener takes an Acknowledgment
  requires static transitive kafka.clients; // and a ConsumerRecord
  requires static spring.grpc.core;
  requires static io.grpc;
  requires static spring.data.redis;
  requires static redis.clients.jedis;
  requires static lettuce.core;
  requires static transitive micrometer.core; // MicrometerIdemListener takes a MeterRegistry
  requires static transitive micrometer.observation; // ObservationIdemListener, an ObservationRegistry
  requires static micrometer.commons;
  requires static micrometer.tracing; // IdemTracingAutoConfiguration, with a Tracer and a Propagator
  requires static com.fasterxml.jackson.databind;
  requires static tools.jackson.core;
  requires static tools.jackson.databind;
  requires static io.swagger.v3.oas.models;
  requires static org.springdoc.openapi.common;

  exports dev.idem.spring;
  exports dev.idem.spring.grpc;
  exports dev.idem.spring.kafka;
  exports dev.idem.spring.keystatus;
  exports dev.idem.spring.method;
  exports dev.idem.spring.observation;
  exports dev.idem.spring.openapi;
  exports dev.idem.spring.outbox;
  exports dev.idem.spring.principal;
  exports dev.idem.spring.purge;
  exports dev.idem.spring.rabbit;
  exports dev.idem.spring.steps;
  exports dev.idem.spring.store;
  exports dev.idem.spring.transaction;
  exports dev.idem.spring.tracing;
  exports dev.idem.spring.web;

  opens dev.idem.spring;
  opens dev.idem.spring.grpc;
  opens dev.idem.spring.kafka;
  opens dev.idem.spring.keystatus;
  opens dev.idem.spring.method;
  opens dev.idem.spring.observation;
  opens dev.idem.spring.openapi;
  opens dev.idem.spring.outbox;
  opens dev.idem.spring.principal;
  opens dev.idem.spring.purge;
  opens dev.idem.spring.rabbit;
  opens dev.idem.spring.steps;
  opens dev.idem.spring.store;
  opens dev.idem.spring.transaction;
  opens dev.idem.spring.tracing;
  opens dev.idem.spring.web;
  opens dev.idem.spring.internal; // not exported: helpers the concerns share
}
