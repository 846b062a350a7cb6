package dev.idem.cli.queue;

import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.outbox.Intent;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import java.time.Duration;
import java.util.List;

/**
 * The process the queue lab kills: it runs one role up to the point of its crash, prints a line
 * saying so, and waits for SIGKILL. It exits by itself when its parent goes away (standard input
 * closes) or after two minutes, so an interrupted lab leaves no process behind.
 *
 * <p>Arguments: {@code role broker brokerUrl jdbcUrl destination arg}, with role one of {@code
 * consumer-naive}, {@code consumer-protected} (take a message, commit the effect, print {@value
 * #COMMITTED}, never ack), {@code relay} (one relay round; print {@value #PUBLISHED} and the number
 * of confirmed messages after the transport returned, before the relay marks them sent), {@code
 * request-naive} (the order and a message published inside the request; print {@value #SENT} before
 * the commit) and {@code request-protected} (the order and an outbox intent; print {@value
 * #RECORDED} before the commit); {@code arg} is the idempotency key of the request roles.
 */
public final class QueueLabChild {

  static final String COMMITTED = "COMMITTED";
  static final String PUBLISHED = "PUBLISHED";
  static final String SENT = "SENT";
  static final String RECORDED = "RECORDED";

  private QueueLabChild() {}

  /**
   * @param args see the class description
   */
  public static void main(String[] args) {
    ChildJvm.exitWhenParentGoes();
    if (args.length != 6) {
      System.err.println("usage: QueueLabChild role broker brokerUrl jdbcUrl destination arg");
      System.exit(2);
    }
    String role = args[0];
    LabDatabase db = new LabDatabase(args[3]);
    String dest = args[4];
    String arg = args[5];
    try (LabBroker broker = LabBroker.connect(args[1], args[2])) {
      switch (role) {
        case "consumer-naive": {
          InboundMessage m = broker.takeWithoutAck(dest, LabBroker.NAIVE, Duration.ofSeconds(30));
          db.insertEffect(QueueLab.CONSUMER_CRASH, LabBroker.NAIVE, m.messageId()); // auto-commit
          ChildJvm.announceAndAwaitKill(COMMITTED);
          break;
        }
        case "consumer-protected": {
          InboundMessage m = broker.takeWithoutAck(dest, LabBroker.PROTECTED, Duration.ofSeconds(30));
          Verdict v = QueueLab.consumer(db, QueueLab.CONSUMER_CRASH).process(m); // effect and key committed
          if (v.action() != Verdict.Action.ACK) {
            throw new IllegalStateException("the first delivery did not commit: " + v);
          }
          ChildJvm.announceAndAwaitKill(COMMITTED);
          break;
        }
        case "relay": {
          IntentTransport real = broker.transport();
          IntentTransport crashing = new IntentTransport() {
            @Override
            public Intent.Kind kind() {
              return real.kind();
            }

            @Override
            public List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
              List<Delivery> results = real.deliver(batch);
              long confirmed = results.stream().filter(d -> d.status() == Delivery.Status.DELIVERED).count();
              ChildJvm.announceAndAwaitKill(PUBLISHED + " " + confirmed);
              return results;
            }
          };
          OutboxRelay relay = QueueLab.relay(QueueLab.outbox(), db, crashing);
          OutboxRelay.Round round = relay.runOnce();
          throw new IllegalStateException("the relay round ended without publishing: " + round);
        }
        case "request-naive":
          QueueLab.orderSendingInside(QueueLab.idem(db), broker, dest, arg, () -> ChildJvm.announceAndAwaitKill(SENT));
          throw new IllegalStateException("the request committed");
        case "request-protected":
          QueueLab.orderWithOutbox(QueueLab.idem(db), QueueLab.outbox(), broker, dest, arg, () -> ChildJvm.announceAndAwaitKill(RECORDED));
          throw new IllegalStateException("the request committed");
        default:
          throw new IllegalArgumentException("unknown role " + role);
      }
    } catch (Exception e) {
      System.err.println("queue lab " + role + ": " + e);
      System.exit(3);
    }
  }
}
