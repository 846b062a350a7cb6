package dev.idem.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;
import org.springframework.util.backoff.FixedBackOff;

/**
 * IdemKafkaContainers.start() run on plain containers, as the starter runs it before they start.
 * Regressions: the wrapping dropped the kafka_deliveryAttempt header of every container (Spring
 * Kafka's CommonDelegatingErrorHandler does not pass it on), and refused a DefaultErrorHandler with
 * ackAfterHandle=false (Spring requires every delegate to agree on it).
 */
class KafkaContainerWrappingTest {

  static EmbeddedKafkaKraftBroker broker;

  @BeforeAll
  static void startBroker() {
    broker = new EmbeddedKafkaKraftBroker(1, 1, "attempts");
    broker.brokerProperty("group.initial.rebalance.delay.ms", "0");
    broker.afterPropertiesSet();
  }

  @AfterAll
  static void stopBroker() {
    if (broker != null) {
      broker.destroy();
    }
  }

  private static DefaultKafkaConsumerFactory<String, String> consumers() {
    return new DefaultKafkaConsumerFactory<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class));
  }

  private static void send(String topic, String... values) {
    try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
        broker.getBrokersAsString(), ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class))) {
      for (String v : values) {
        p.send(new ProducerRecord<>(topic, "k", v));
      }
      p.flush();
    }
  }

  /** What the starter does before the containers start. */
  private static void idemStartUp(KafkaMessageListenerContainer<?, ?> container, boolean withIdemListener) {
    DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
    beans.registerSingleton("container", container);
    if (withIdemListener) {
      RootBeanDefinition d = new RootBeanDefinition(IdemKafkaListener.class);
      d.setLazyInit(true);
      beans.registerBeanDefinition("ordersListener", d);
    }
    new IdemKafkaContainers(beans).start();
  }

  private static void await(java.util.function.BooleanSupplier done, Duration max) throws InterruptedException {
    long end = System.nanoTime() + max.toNanos();
    while (!done.getAsBoolean() && System.nanoTime() < end) {
      Thread.sleep(100);
    }
  }

  /**
   * A container of the application's own (no Idem listener on it) that asks for the delivery
   * attempt header: its DefaultErrorHandler supplies it. After Idem's wrapping the header is gone
   * (CommonDelegatingErrorHandler.deliveryAttemptHeader() is false).
   */
  @Test
  void aContainersDeliveryAttemptHeaderSurvivesTheWrapping() throws Exception {
    List<String> without = attempts("g-attempts-plain", false);
    List<String> with = attempts("g-attempts-idem", true);
    System.out.println("KafkaContainerWrappingTest: delivery attempts seen by the listener: without Idem's start-up " + without + ", with it " + with);
    assertThat(without).as("control: the container alone").containsExactly("1", "2");
    assertThat(with).as("kafka_deliveryAttempt header of each delivery after Idem's start-up").containsExactly("1", "2");
  }

  private static List<String> attempts(String group, boolean idem) throws Exception {
    ContainerProperties props = new ContainerProperties("attempts");
    props.setGroupId(group);
    props.setDeliveryAttemptHeader(true);
    props.setPollTimeout(200);
    List<String> attempts = new CopyOnWriteArrayList<>();
    props.setMessageListener((MessageListener<String, String>) record -> {
      Header h = record.headers().lastHeader(KafkaHeaders.DELIVERY_ATTEMPT);
      attempts.add(h == null ? "none" : Integer.toString(ByteBuffer.wrap(h.value()).getInt()));
      if (attempts.size() < 2) {
        throw new IllegalStateException("fails once");
      }
    });
    KafkaMessageListenerContainer<String, String> container = new KafkaMessageListenerContainer<>(consumers(), props);
    container.setCommonErrorHandler(new DefaultErrorHandler(new FixedBackOff(0, 3)));
    if (idem) {
      idemStartUp(container, false);
    }
    container.start();
    try {
      if (!idem) {
        send("attempts", "v");
      }
      await(() -> attempts.size() >= 2, Duration.ofSeconds(30));
    } finally {
      container.stop();
    }
    return attempts;
  }

  /**
   * A DefaultErrorHandler (which seeks after handling) with ackAfterHandle=false, on a RECORD
   * container: the docs name DefaultErrorHandler as supported, but the start-up is refused.
   */
  @Test
  void aDefaultErrorHandlerWithoutAckAfterHandleIsWrappedNotRefused() {
    ContainerProperties props = new ContainerProperties("attempts");
    props.setGroupId("g-refused");
    props.setAckMode(ContainerProperties.AckMode.RECORD);
    props.setMessageListener((MessageListener<String, String>) record -> { });
    KafkaMessageListenerContainer<String, String> container = new KafkaMessageListenerContainer<>(consumers(), props);
    DefaultErrorHandler own = new DefaultErrorHandler();
    own.setAckAfterHandle(false);
    container.setCommonErrorHandler(own);
    Throwable thrown = null;
    try {
      idemStartUp(container, true);
    } catch (RuntimeException e) {
      thrown = e;
    }
    System.out.println("KafkaContainerWrappingTest: start-up with DefaultErrorHandler(ackAfterHandle=false): " + thrown);
    assertThat(thrown).isNull();
    assertThat(container.getCommonErrorHandler()).isInstanceOf(IdemKafkaContainers.IdemDelegatingErrorHandler.class);
  }
}
