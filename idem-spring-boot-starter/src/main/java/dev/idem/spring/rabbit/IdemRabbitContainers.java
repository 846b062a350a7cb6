package dev.idem.spring.rabbit;

import dev.idem.spring.IdemUnsupportedException;
import dev.idem.spring.internal.BeforeContainersCheck;
import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.factory.ListableBeanFactory;

/**
 * Refuses, before the containers start, a RabbitMQ listener container that would acknowledge by
 * itself a message an {@link IdemRabbitListener} handles: with {@code AUTO} the container
 * acknowledges after the method returns (a second acknowledgement of a delivery Idem already
 * acknowledged or requeued closes the channel), with {@code NONE} the broker forgets the message on
 * delivery (Idem's requeue of a failed or unrecorded message is lost). A container is checked when
 * it consumes the {@link IdemRabbitListener#queue() queue} of an {@code IdemRabbitListener} bean;
 * the failure is an {@link IdemUnsupportedException} naming the container, the queue and the
 * listener. Runs in a lifecycle phase before the containers'. Thread-safe.
 */
final class IdemRabbitContainers extends BeforeContainersCheck {

  private final ListableBeanFactory beans;

  IdemRabbitContainers(ListableBeanFactory beans) {
    super(Integer.MAX_VALUE - 1000);
    this.beans = beans;
  }

  @Override
  public void check() {
    Collection<IdemRabbitListener> listeners = beans.getBeansOfType(IdemRabbitListener.class, false, false).values();
    List<String> wrong = new ArrayList<>();
    if (!listeners.isEmpty()) {
      for (AbstractMessageListenerContainer container : containers()) {
        List<String> queues = Arrays.asList(container.getQueueNames());
        for (IdemRabbitListener listener : listeners) {
          if (queues.contains(listener.queue()) && container.getAcknowledgeMode() != AcknowledgeMode.MANUAL) {
            wrong.add("container '" + container.getListenerId() + "' consumes queue '" + listener.queue() + "' of Idem listener '"
                + listener.consumer().name() + "' with acknowledge mode " + container.getAcknowledgeMode());
          }
        }
      }
    }
    if (!wrong.isEmpty()) {
      throw new IdemUnsupportedException("RabbitMQ listener containers that acknowledge by themselves what an Idem listener"
          + " acknowledges, requeues or dead-letters: " + String.join("; ", wrong),
          "Supported: acknowledge mode MANUAL (@RabbitListener(ackMode = \"MANUAL\"), or"
          + " spring.rabbitmq.listener.simple.acknowledge-mode=manual), the method calling IdemRabbitListener.process(message,"
          + " channel)");
    }
  }

  /**
   * The registry's containers and the container beans. The registry's {@code
   * getListenerContainers()} returns another interface on Spring AMQP 4 than on 3, so it is called
   * reflectively; both lines' containers are {@link AbstractMessageListenerContainer}s.
   */
  private List<AbstractMessageListenerContainer> containers() {
    List<AbstractMessageListenerContainer> all = new ArrayList<>();
    for (RabbitListenerEndpointRegistry registry : beans.getBeansOfType(RabbitListenerEndpointRegistry.class, false, false).values()) {
      Object containers;
      try {
        containers = RabbitListenerEndpointRegistry.class.getMethod("getListenerContainers").invoke(registry);
      } catch (NoSuchMethodException | IllegalAccessException e) {
        throw new IllegalStateException("this Spring AMQP's RabbitListenerEndpointRegistry has no getListenerContainers()", e);
      } catch (InvocationTargetException e) {
        throw new IllegalStateException("cannot list the RabbitMQ listener containers", e.getCause());
      }
      for (Object c : (Collection<?>) containers) {
        if (c instanceof AbstractMessageListenerContainer container) {
          all.add(container);
        }
      }
    }
    for (AbstractMessageListenerContainer bean : beans.getBeansOfType(AbstractMessageListenerContainer.class, false, false).values()) {
      if (!all.contains(bean)) {
        all.add(bean);
      }
    }
    return all;
  }
}
