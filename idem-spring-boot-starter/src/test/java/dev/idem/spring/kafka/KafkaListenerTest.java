package dev.idem.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.kafka.KafkaRecordHandler;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemUnsupportedException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.ByteBufferDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.serialization.UUIDDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.kafka.annotation.EnableKafka;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * {@code @KafkaListener} methods through {@link IdemKafkaListener}: a record listener with manual
 * acknowledgement and a batch listener with automatic acknowledgement, on a KRaft broker that the
 * test starts in this JVM (spring-kafka-test's), with the key table and the effects in one SQLite
 * file. Each test has its own topics and consumer groups.
 */
class KafkaListenerTest {

  static EmbeddedKafkaKraftBroker broker;

  @TempDir Path dir;

  private String topic;

  @BeforeAll
  static void startBroker() {
    broker = new EmbeddedKafkaKraftBroker(1, 2);
    broker.brokerProperty("group.initial.rebalance.delay.ms", "0");
    broker.afterPropertiesSet();
  }

  @AfterAll
  static void stopBroker() {
    if (broker != null) {
      broker.destroy();
    }
  }

  /** The application: two container factories, an idempotent consumer, two listener methods. */
  @Configuration(proxyBeanMethods = false)
  @EnableKafka
  static class App {
    /** Handler runs per record id, counted even when the handler fails. */
    static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();

    @Bean
    DefaultKafkaConsumerFactory<String, String> kafkaConsumerFactory(Environment env) {
      return new DefaultKafkaConsumerFactory<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.getProperty("test.servers"),
          ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
          ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
          ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class));
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<String, String> kafkaListenerContainerFactory(
        DefaultKafkaConsumerFactory<String, String> cf) {
      ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
      f.setConsumerFactory(cf);
      f.setConcurrency(2); // a member per partition: the delivery counts are shared by the listener
      f.getContainerProperties().setAckMode(ContainerProperties.AckMode.MANUAL_IMMEDIATE);
      f.getContainerProperties().setPollTimeout(200); // a quick rejoin when the second member joins, a quick stop
      return f;
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<String, String> batchFactory(DefaultKafkaConsumerFactory<String, String> cf) {
      ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
      f.setConsumerFactory(cf);
      f.setBatchListener(true);
      f.getContainerProperties().setAckMode(ContainerProperties.AckMode.BATCH);
      f.getContainerProperties().setPollTimeout(200);
      f.setCommonErrorHandler(IdemKafkaListener.retryingErrorHandler(Duration.ofMillis(50)));
      return f;
    }

    @Bean(destroyMethod = "close")
    KafkaProducer<byte[], byte[]> deadLetterProducer(Environment env) {
      return new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, env.getProperty("test.servers"),
          ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
          ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class));
    }

    @Bean
    IdemKafkaListener ordersListener(IdemKafkaListeners listeners, KafkaProducer<byte[], byte[]> producer, Environment env) {
      return listeners.transactional("orders", (connection, message) -> {
        String id = message.header("message-id");
        RUNS.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
        try (Statement s = connection.createStatement()) {
          s.executeUpdate("INSERT INTO effects(message_id) VALUES ('" + id + "')");
        }
        if (new String(message.body(), StandardCharsets.UTF_8).startsWith("poison")) {
          throw new IllegalStateException("cannot handle " + id); // after the write: rolled back
        }
      }, KafkaRecordHandler.DeadLetter.toTopic(producer, env.getProperty("test.topic") + ".DLT")).withBackoff(Duration.ofMillis(20));
    }

    @Bean
    Orders orders(@org.springframework.beans.factory.annotation.Qualifier("ordersListener") IdemKafkaListener ordersListener) {
      return new Orders(ordersListener);
    }

    /** A manual-acknowledgement container on Spring's default error handler, for values of the given deserializer. */
    private static ConcurrentKafkaListenerContainerFactory<String, Object> manual(Environment env, Class<?> valueDeserializer) {
      ConcurrentKafkaListenerContainerFactory<String, Object> f = new ConcurrentKafkaListenerContainerFactory<>();
      f.setConsumerFactory(new DefaultKafkaConsumerFactory<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
          env.getProperty("test.servers"), ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
          ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false, ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
          ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, valueDeserializer)));
      f.getContainerProperties().setAckMode(ContainerProperties.AckMode.MANUAL);
      f.getContainerProperties().setPollTimeout(200);
      return f;
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<String, Object> bufferFactory(Environment env) {
      return manual(env, ByteBufferDeserializer.class);
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<String, Object> uuidFactory(Environment env) {
      return manual(env, UUIDDeserializer.class);
    }

    /** What Spring Boot defines: a template, with String serializers. */
    @Bean
    KafkaTemplate<String, String> kafkaTemplate(Environment env) {
      return new KafkaTemplate<>(new DefaultKafkaProducerFactory<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
          env.getProperty("test.servers"), ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
          ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class)));
    }

    @Bean
    IdemKafkaListener paymentsListener(IdemKafkaListeners listeners, KafkaTemplate<String, String> template, Environment env) {
      return listeners.transactional("payments", (connection, message) -> {
        String id = message.header("message-id");
        RUNS.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
        try (Statement s = connection.createStatement()) {
          s.executeUpdate("INSERT INTO effects(message_id) VALUES ('" + id + "')");
        }
      }, listeners.deadLetterTopic(template, env.getProperty("test.topic") + ".DLT")).withBackoff(Duration.ofMillis(20));
    }

    @Bean
    Payments payments(@org.springframework.beans.factory.annotation.Qualifier("paymentsListener") IdemKafkaListener paymentsListener) {
      return new Payments(paymentsListener);
    }
  }

  /** An automatic-acknowledgement container on Spring's default error handler, and a listener that asks to retry. */
  @Configuration(proxyBeanMethods = false)
  static class RetryingApp {
    /** Attempts per message id. */
    static final Map<String, AtomicInteger> ATTEMPTS = new ConcurrentHashMap<>();

    @Bean
    ConcurrentKafkaListenerContainerFactory<String, String> recordFactory(DefaultKafkaConsumerFactory<String, String> cf) {
      ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
      f.setConsumerFactory(cf);
      f.getContainerProperties().setAckMode(ContainerProperties.AckMode.RECORD);
      f.getContainerProperties().setPollTimeout(200);
      return f; // no error handler: the container's default, ten attempts then log and skip
    }

    @Bean
    Stubborn stubborn() {
      return new Stubborn();
    }
  }

  /** Asks to retry its record 15 times, as an Idem listener does while its key table is down. */
  static class Stubborn {
    @KafkaListener(id = "stubborn", topics = "${test.topic}", groupId = "${test.topic}-stubborn", autoStartup = "false",
        containerFactory = "recordFactory")
    void on(ConsumerRecord<String, String> record) {
      String id = new String(record.headers().lastHeader("message-id").value(), StandardCharsets.UTF_8);
      int attempt = RetryingApp.ATTEMPTS.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
      if (id.equals("stubborn") && attempt <= 15) {
        throw new IdemKafkaListener.RetryException("the key table is down (attempt " + attempt + ")");
      }
    }
  }

  /** An automatic-acknowledgement container whose error handler logs and skips, beside an Idem listener. */
  @Configuration(proxyBeanMethods = false)
  static class SkippingApp {
    @Bean
    ConcurrentKafkaListenerContainerFactory<String, String> recordFactory(DefaultKafkaConsumerFactory<String, String> cf) {
      ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
      f.setConsumerFactory(cf);
      f.getContainerProperties().setAckMode(ContainerProperties.AckMode.RECORD);
      f.setCommonErrorHandler(new org.springframework.kafka.listener.CommonLoggingErrorHandler());
      return f;
    }

    @Bean
    Stubborn stubborn() {
      return new Stubborn();
    }
  }

  /** A consumer factory of UUID values, which no Idem listener can read. */
  @Configuration(proxyBeanMethods = false)
  static class UuidFactoryApp {
    @Bean
    DefaultKafkaConsumerFactory<String, UUID> uuidConsumerFactory(Environment env) {
      return new DefaultKafkaConsumerFactory<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.getProperty("test.servers"),
          ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
          ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, org.springframework.kafka.support.serializer.ErrorHandlingDeserializer.class,
          org.springframework.kafka.support.serializer.ErrorHandlingDeserializer.VALUE_DESERIALIZER_CLASS, UUIDDeserializer.class));
    }
  }

  /** A listener whose records carry their id as the record key (a plain KafkaTemplate.send(topic, id, value)). */
  @Configuration(proxyBeanMethods = false)
  static class KeyedApp {
    @Bean
    IdemKafkaListener keyedListener(IdemKafkaListeners listeners, KafkaTemplate<String, String> template, Environment env) {
      return listeners.transactional("keyed", KafkaRecordHandler.KeySource.recordKey(), (connection, message) -> {
        App.RUNS.computeIfAbsent(message.messageId(), k -> new AtomicInteger()).incrementAndGet();
        try (Statement s = connection.createStatement()) {
          s.executeUpdate("INSERT INTO effects(message_id) VALUES ('" + message.messageId() + "')");
        }
      }, listeners.deadLetterTopic(template, env.getProperty("test.topic") + ".DLT"));
    }

    @Bean
    Keyed keyed(@org.springframework.beans.factory.annotation.Qualifier("keyedListener") IdemKafkaListener keyedListener) {
      return new Keyed(keyedListener);
    }
  }

  static class Keyed {
    final IdemKafkaListener listener;

    Keyed(IdemKafkaListener listener) {
      this.listener = listener;
    }

    @KafkaListener(id = "keyed", topics = "${test.topic}", groupId = "${test.topic}-keyed", autoStartup = "false")
    void on(ConsumerRecord<String, String> record, Acknowledgment ack) {
      listener.process(record, ack);
    }
  }

  /** Listeners whose values are not byte[] or String. */
  static class Payments {
    final IdemKafkaListener listener;

    Payments(IdemKafkaListener listener) {
      this.listener = listener;
    }

    @KafkaListener(id = "buffers", topics = "${test.topic}", groupId = "${test.topic}-buffers", autoStartup = "false",
        containerFactory = "bufferFactory")
    void onBuffer(ConsumerRecord<String, java.nio.ByteBuffer> record, Acknowledgment ack) {
      listener.process(record, ack);
    }

    @KafkaListener(id = "uuids", topics = "${test.topic}", groupId = "${test.topic}-uuids", autoStartup = "false",
        containerFactory = "uuidFactory")
    void onUuid(ConsumerRecord<String, UUID> record, Acknowledgment ack) {
      listener.process(record, ack);
    }
  }

  /** What an application writes. */
  static class Orders {
    final IdemKafkaListener listener;

    Orders(IdemKafkaListener listener) {
      this.listener = listener;
    }

    @KafkaListener(id = "orders", topics = "${test.topic}", groupId = "${test.topic}-records", autoStartup = "false")
    void onOrder(ConsumerRecord<String, String> record, Acknowledgment ack) {
      listener.process(record, ack);
    }

    @KafkaListener(id = "batches", topics = "${test.topic}", groupId = "${test.topic}-batches", autoStartup = "false",
        containerFactory = "batchFactory")
    void onOrders(List<ConsumerRecord<String, String>> records) {
      listener.processBatch(records);
    }
  }

  @BeforeEach
  void topics() throws Exception {
    topic = "idem-starter-" + UUID.randomUUID().toString().substring(0, 8);
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.getBrokersAsString()))) {
      admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1), new NewTopic(topic + ".DLT", 1, (short) 1)))
          .all().get();
    }
    App.RUNS.clear();
  }

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withUserConfiguration(App.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4",
            "test.servers=" + broker.getBrokersAsString(), "test.topic=" + topic);
  }

  private void publish(String id, String key, String body) throws Exception {
    try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
        broker.getBrokersAsString(), ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class))) {
      ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key.getBytes(StandardCharsets.UTF_8),
          body.getBytes(StandardCharsets.UTF_8));
      r.headers().add("message-id", id.getBytes(StandardCharsets.UTF_8));
      p.send(r).get();
    }
  }

  private static void createEffects(ApplicationContext ctx) throws Exception {
    try (java.sql.Connection c = ctx.getBean(DataSource.class).getConnection(); Statement s = c.createStatement()) {
      s.executeUpdate("CREATE TABLE effects(message_id TEXT NOT NULL)");
    }
  }

  private static int effects(ApplicationContext ctx, String messageId) {
    try (java.sql.Connection c = ctx.getBean(DataSource.class).getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM effects WHERE message_id = '" + messageId + "'")) {
      rs.next();
      return rs.getInt(1);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("not within 30 s: " + what);
      }
      Thread.sleep(50);
    }
  }

  private List<ConsumerRecord<byte[], byte[]>> deadLetters() {
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
        broker.getBrokersAsString(), ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class))) {
      TopicPartition tp = new TopicPartition(topic + ".DLT", 0);
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      long end = c.endOffsets(List.of(tp)).get(tp);
      while (c.position(tp) < end) {
        c.poll(Duration.ofMillis(200)).forEach(out::add);
      }
    }
    return out;
  }

  private static String header(ConsumerRecord<?, ?> r, String name) {
    return new String(r.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
  }

  @Test
  void aRecordListenerWithManualAcksRunsEachIdOnceAndDeadLettersThePoisonWithTheReason() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      createEffects(ctx);
      int max = ctx.getBean("ordersListener", IdemKafkaListener.class).consumer().maxDeliveries();
      publish("order-1", "a", "{\"order\":1}");
      publish("order-1", "a", "{\"order\":1}"); // a redelivery: the relay published it twice
      publish("order-2", "b", "poison pill");
      publish("order-3", "b", "{\"order\":3}"); // behind the poison in its partition
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("orders").start();

      await(() -> effects(ctx, "order-3") == 1 && effects(ctx, "order-1") == 1, "the good records handled");
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("orders").stop();

      assertThat(App.RUNS.get("order-1").get()).as("the copy replayed").isEqualTo(1);
      assertThat(App.RUNS.get("order-2").get()).as("run once per delivery, up to the bound").isEqualTo(max);
      assertThat(effects(ctx, "order-2")).as("each failed run rolled back").isZero();
      List<ConsumerRecord<byte[], byte[]>> dead = deadLetters();
      assertThat(dead).hasSize(1);
      assertThat(header(dead.get(0), "message-id")).isEqualTo("order-2");
      assertThat(header(dead.get(0), KafkaRecordHandler.REASON_HEADER)).contains("cannot handle order-2")
          .contains("failed on delivery " + max + " of at most " + max);
      assertThat(header(dead.get(0), "x-idem-topic")).isEqualTo(topic);
    });
  }

  @Test
  void aBatchListenerWithAutomaticAcksCommitsOnlyHandledRecordsAndRetriesFromTheFailedOne() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      createEffects(ctx);
      for (int i = 0; i < 10; i++) {
        publish("line-" + i, "k", "{\"line\":" + i + "}");
      }
      publish("line-1", "k", "{\"line\":1}");
      publish("line-poison", "k", "poison");
      publish("line-after", "k", "{\"line\":\"after\"}");
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("batches").start();

      await(() -> effects(ctx, "line-after") == 1, "the record behind the poison handled");
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("batches").stop();
      for (int i = 0; i < 10; i++) {
        assertThat(App.RUNS.get("line-" + i).get()).as("line-" + i + " ran once, though its batch was polled again").isEqualTo(1);
        assertThat(effects(ctx, "line-" + i)).isEqualTo(1);
      }
      assertThat(App.RUNS.get("line-poison").get()).isEqualTo(5);
      assertThat(deadLetters()).extracting(r -> header(r, "message-id")).containsExactly("line-poison");
    });
  }

  /**
   * Regression: with automatic acknowledgement, a record an Idem listener asked to retry more often
   * than the container's error handler allowed (Spring's default: ten attempts, then log and skip)
   * was skipped and its offset committed: a key table down for a few seconds lost the record. The
   * starter now wraps every container's error handler so that Idem's retries never give up.
   */
  @Test
  void anAutomaticAckContainerOnSpringsDefaultErrorHandlerNeverSkipsARecordIdemAsksToRetry() {
    RetryingApp.ATTEMPTS.clear();
    app().withUserConfiguration(RetryingApp.class).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      publish("stubborn", "k", "{}");
      publish("behind", "k", "{}"); // same partition, behind it
      org.springframework.kafka.listener.MessageListenerContainer container =
          ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("stubborn");
      assertThat(((org.springframework.kafka.listener.AbstractMessageListenerContainer<?, ?>) container).getCommonErrorHandler())
          .isInstanceOf(IdemKafkaContainers.IdemDelegatingErrorHandler.class);
      container.start();
      await(() -> RetryingApp.ATTEMPTS.containsKey("behind"), "the record behind handled");
      container.stop();
      assertThat(RetryingApp.ATTEMPTS.get("stubborn").get()).as("retried until it passed, not skipped after ten").isEqualTo(16);
      assertThat(RetryingApp.ATTEMPTS.get("behind").get()).isEqualTo(1);
    });
  }

  @Test
  void anAutomaticAckContainerWhoseErrorHandlerSkipsStopsTheStartUpBesideAnIdemListener() {
    app().withUserConfiguration(SkippingApp.class).run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).rootCause().isInstanceOf(IdemUnsupportedException.class)
          .hasMessageContaining("container 'stubborn' (ack mode RECORD, error handler "
              + "org.springframework.kafka.listener.CommonLoggingErrorHandler")
          .hasMessageContaining("Supported: manual acknowledgement");
    });
  }

  /**
   * Was: the starter's listeners read ids only from the message-id header, so records a plain
   * KafkaTemplate sent (keyed by their id, no header) were all dead-lettered; a key source can be given.
   */
  @Test
  void aListenerWhoseIdsAreTheRecordKeysRunsEachIdOnce() {
    app().withUserConfiguration(KeyedApp.class).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      createEffects(ctx);
      try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
          broker.getBrokersAsString(), ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
          ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class))) {
        p.send(new ProducerRecord<>(topic, "pay-k1", "{\"pay\":1}")).get();
        p.send(new ProducerRecord<>(topic, "pay-k1", "{\"pay\":1}")).get(); // a copy
        p.send(new ProducerRecord<>(topic, "pay-k2", "{\"pay\":2}")).get();
      }
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("keyed").start();
      await(() -> effects(ctx, "pay-k1") == 1 && effects(ctx, "pay-k2") == 1, "both ids handled");
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("keyed").stop();
      assertThat(App.RUNS.get("pay-k1").get()).as("the copy replayed").isEqualTo(1);
      assertThat(deadLetters()).isEmpty();
    });
  }

  @Test
  void withoutSpringKafkaThereIsNoKafkaListenerFactory() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("a.db"))
        .withClassLoader(new FilteredClassLoader("org.springframework.kafka"))
        .run(ctx -> assertThat(ctx).doesNotHaveBean(IdemKafkaListeners.class));
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("b.db"))
        .run(ctx -> assertThat(ctx).hasSingleBean(IdemKafkaListeners.class));
  }

  /**
   * Regression: in a MANUAL-acknowledgement container on Spring's default error handler, records
   * whose values were ByteBuffer made the listener support throw ("the record's value is a
   * java.nio.HeapByteBuffer"), and the error handler skipped them after its back-off: 0 rows,
   * nothing dead-lettered.
   */
  @Test
  void aByteBufferValuedManualAckListenerHandlesEveryRecordNoneSkipped() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      createEffects(ctx);
      for (int i = 0; i < 3; i++) {
        publish("pay-" + i, "k" + i, "{\"pay\":" + i + "}");
      }
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("buffers").start();
      await(() -> effects(ctx, "pay-0") == 1 && effects(ctx, "pay-1") == 1 && effects(ctx, "pay-2") == 1,
          "every ByteBuffer record handled");
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("buffers").stop();
      for (int i = 0; i < 3; i++) {
        assertThat(App.RUNS.get("pay-" + i).get()).isEqualTo(1);
      }
      assertThat(deadLetters()).isEmpty();
    });
  }

  /**
   * A value type the listener cannot read is dead-lettered with the reason (through a dead-letter
   * topic made from Spring's KafkaTemplate), never thrown into the container to be skipped.
   */
  @Test
  void aRecordOfAnUnreadableValueTypeIsDeadLetteredWithTheReasonNotSkipped() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      createEffects(ctx);
      publish("pay-uuid", "k", UUID.randomUUID().toString());
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("uuids").start();
      await(() -> !deadLetters().isEmpty(), "the record dead-lettered");
      ctx.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("uuids").stop();
      List<ConsumerRecord<byte[], byte[]>> dead = deadLetters();
      assertThat(dead).hasSize(1);
      assertThat(header(dead.get(0), "message-id")).isEqualTo("pay-uuid");
      assertThat(header(dead.get(0), KafkaRecordHandler.REASON_HEADER)).contains("java.util.UUID");
      assertThat(header(dead.get(0), "x-idem-topic")).isEqualTo(topic);
      assertThat(App.RUNS).doesNotContainKey("pay-uuid");
      assertThat(effects(ctx, "pay-uuid")).isZero();
    });
  }

  /**
   * A deserializer whose values an Idem listener cannot read was found only at the first record
   * (dead-lettered); the start-up now names the factory, behind an error-handling deserializer too.
   */
  @Test
  @ExtendWith(OutputCaptureExtension.class)
  void aConsumerFactoryOfValuesNoIdemListenerReadsIsNamedAtStartUp(CapturedOutput output) {
    app().withUserConfiguration(UuidFactoryApp.class).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(output.getOut()).contains("Idem: Kafka consumer factory 'uuidConsumerFactory' reads values with "
          + UUIDDeserializer.class.getName()).doesNotContain("Idem: Kafka consumer factory 'kafkaConsumerFactory'");
    });
  }

  @Test
  @ExtendWith(OutputCaptureExtension.class)
  void eachProtectedListenerSaysAtStartUpWhatProtectsIt(CapturedOutput output) {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(output.getOut()).contains("Idem: listener 'orders' (transactional, Kafka) keys from header 'message-id'")
          .contains("Idem: listener 'payments' (transactional, Kafka)")
          .contains("dead letters to topic '" + topic + ".DLT'");
    });
  }
}
