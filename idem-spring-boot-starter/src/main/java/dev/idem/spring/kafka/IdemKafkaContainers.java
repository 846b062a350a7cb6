package dev.idem.spring.kafka;

import dev.idem.spring.IdemUnsupportedException;
import dev.idem.spring.internal.BeforeContainersCheck;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteBufferDeserializer;
import org.apache.kafka.common.serialization.BytesDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.CommonDelegatingErrorHandler;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.TopicPartitionOffset;
import org.springframework.kafka.support.serializer.ErrorHandlingDeserializer;

/**
 * Makes every Kafka listener container of the application safe for {@link IdemKafkaListener}s
 * before the containers start: a record that an Idem listener with automatic acknowledgement
 * asks to retry ({@link IdemKafkaListener.RetryException}, directly or as the cause of a {@code
 * BatchListenerFailedException}) goes to an error handler that seeks back and retries it for
 * ever (Idem dead-letters by itself after its last allowed delivery); every other failure goes to
 * the container's own error handler, as before. Without this, Spring's default error handler
 * (ten attempts, then log and skip) would commit past a record whose key table was down for a few
 * seconds.
 *
 * <p>The wrapping uses Spring Kafka's {@link CommonDelegatingErrorHandler}, which needs the
 * container's handler to seek after handling, as {@link DefaultErrorHandler} (Spring's default)
 * does. A container with automatic acknowledgement whose handler cannot be wrapped (say a {@code
 * CommonLoggingErrorHandler}, which skips) stops the start-up with {@link
 * IdemUnsupportedException} when the application has an {@link IdemKafkaListener} bean, since
 * Idem cannot tell which container calls which listener; containers with manual acknowledgement
 * are safe whatever their handler, because an Idem listener's manual-acknowledgement methods never
 * throw. A consumer factory whose value deserializer gives records an Idem listener cannot read
 * (not a {@code String}, {@code byte[]}, {@code ByteBuffer} or {@code Bytes} deserializer, directly
 * or behind an {@code ErrorHandlingDeserializer}) gets one WARN line at start-up, since each of its
 * records would be dead-lettered. Runs in the lifecycle phase before the containers'. Thread-safe.
 */
final class IdemKafkaContainers extends BeforeContainersCheck {

  private static final Logger LOG = LoggerFactory.getLogger("dev.idem.spring.listeners");

  /** Between retries of a record an Idem listener asked to retry, beside the listener's own pause. */
  static final Duration RETRY_BACKOFF = Duration.ofMillis(100);

  private final ListableBeanFactory beans;

  IdemKafkaContainers(ListableBeanFactory beans) {
    super(AbstractMessageListenerContainer.DEFAULT_PHASE - 100);
    this.beans = beans;
  }

  @Override
  public void check() {
    boolean idemListeners = beans.getBeanNamesForType(IdemKafkaListener.class, true, false).length > 0;
    List<String> unsafe = new ArrayList<>();
    for (MessageListenerContainer container : containers()) {
      if (!(container instanceof AbstractMessageListenerContainer<?, ?> c)) {
        continue;
      }
      String problem = protect(c);
      if (problem != null && !manual(c.getContainerProperties().getAckMode())) {
        unsafe.add(problem);
      }
    }
    if (idemListeners) {
      warnOfUnreadableValues();
    }
    if (idemListeners && !unsafe.isEmpty()) {
      throw new IdemUnsupportedException("Kafka listener containers with automatic acknowledgement whose error handler could skip"
          + " a record an Idem listener asked to retry: " + String.join("; ", unsafe),
          "Supported: manual acknowledgement (AckMode.MANUAL or MANUAL_IMMEDIATE, the listener method calling"
          + " IdemKafkaListener.process(record, ack), which never throws into the container), or an error handler that seeks"
          + " after handling, such as Spring's DefaultErrorHandler or IdemKafkaListener.retryingErrorHandler(backoff)");
    }
  }

  /** @return why the container's error handler cannot be wrapped, or {@code null} once it is */
  private static String protect(AbstractMessageListenerContainer<?, ?> container) {
    CommonErrorHandler own = container.getCommonErrorHandler();
    if (own == null) {
      own = new DefaultErrorHandler(); // what the container would use: ten attempts, then log and skip
    }
    if (own instanceof IdemDelegatingErrorHandler) {
      return null;
    }
    try {
      container.setCommonErrorHandler(new IdemDelegatingErrorHandler(own));
      LOG.debug("Idem: Kafka listener container '{}': records an Idem listener asks to retry are retried for ever; other"
          + " failures go to its {}", container.getListenerId(), own.getClass().getSimpleName());
      return null;
    } catch (IllegalArgumentException | IllegalStateException e) {
      return "container '" + container.getListenerId() + "' (ack mode " + container.getContainerProperties().getAckMode()
          + ", error handler " + own.getClass().getName() + ": " + e.getMessage() + ")";
    }
  }

  /** The value deserializers whose records an Idem listener reads. */
  private static final Set<String> READABLE = Set.of(StringDeserializer.class.getName(), ByteArrayDeserializer.class.getName(),
      ByteBufferDeserializer.class.getName(), BytesDeserializer.class.getName());

  /**
   * One WARN line per consumer factory whose records an Idem listener could not read: its records
   * would each be dead-lettered with the reason. A warning, not a refusal, since a factory may
   * serve only listeners without Idem.
   */
  @SuppressWarnings("rawtypes")
  private void warnOfUnreadableValues() {
    for (Map.Entry<String, ConsumerFactory> e : beans.getBeansOfType(ConsumerFactory.class, false, false).entrySet()) {
      String deserializer = valueDeserializer(e.getValue());
      if (deserializer != null && !READABLE.contains(deserializer)) {
        LOG.warn("Idem: Kafka consumer factory '{}' reads values with {}: an IdemKafkaListener reads byte[], String, ByteBuffer"
            + " or Bytes values, and dead-letters every record of another type, so a container of this factory must not call"
            + " one (set the value deserializer to StringDeserializer or ByteArrayDeserializer there)", e.getKey(), deserializer);
      }
    }
  }

  /** @return the class name of the factory's value deserializer (the delegate of an error-handling one), or {@code null} */
  static String valueDeserializer(ConsumerFactory<?, ?> factory) {
    Map<String, Object> config = factory.getConfigurationProperties();
    Object d = factory.getValueDeserializer() != null ? factory.getValueDeserializer().getClass()
        : config.get(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG);
    String name = d instanceof Class<?> c ? c.getName() : d == null ? null : d.toString();
    if (ErrorHandlingDeserializer.class.getName().equals(name)) {
      Object delegate = config.get(ErrorHandlingDeserializer.VALUE_DESERIALIZER_CLASS);
      name = delegate instanceof Class<?> c ? c.getName() : delegate == null ? null : delegate.toString();
    }
    return name;
  }

  private static boolean manual(ContainerProperties.AckMode mode) {
    return mode == ContainerProperties.AckMode.MANUAL || mode == ContainerProperties.AckMode.MANUAL_IMMEDIATE;
  }

  private List<MessageListenerContainer> containers() {
    List<MessageListenerContainer> all = new ArrayList<>();
    for (KafkaListenerEndpointRegistry registry : beans.getBeansOfType(KafkaListenerEndpointRegistry.class, false, false).values()) {
      all.addAll(registry.getAllListenerContainers());
    }
    for (MessageListenerContainer bean : beans.getBeansOfType(MessageListenerContainer.class, false, false).values()) {
      if (!all.contains(bean)) {
        all.add(bean);
      }
    }
    return all;
  }

  /**
   * The container's own handler, with Idem's retries sent to a handler that never gives up. It
   * answers for the own handler what Spring Kafka's {@link CommonDelegatingErrorHandler} does not
   * pass on: the delivery attempt header ({@code kafka_deliveryAttempt}) and its count; and the
   * retrying handler takes the own handler's ack-after-handle, which Spring requires of every
   * delegate.
   */
  static final class IdemDelegatingErrorHandler extends CommonDelegatingErrorHandler {
    private final CommonErrorHandler own;

    IdemDelegatingErrorHandler(CommonErrorHandler own) {
      super(own);
      this.own = own;
      setCauseChainTraversing(true);
      CommonErrorHandler retrying = IdemKafkaListener.retryingErrorHandler(RETRY_BACKOFF);
      retrying.setAckAfterHandle(own.isAckAfterHandle());
      addDelegate(IdemKafkaListener.RetryException.class, retrying);
    }

    @Override
    public boolean deliveryAttemptHeader() {
      return own.deliveryAttemptHeader();
    }

    @Override
    public int deliveryAttempt(TopicPartitionOffset topicPartitionOffset) {
      return own.deliveryAttempt(topicPartitionOffset);
    }
  }
}
