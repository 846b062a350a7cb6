package dev.idem.outbox;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.outbox.spi.IntentTransport;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Assumptions;

/**
 * A real broker for the contract: destinations of its own with unique names, created for one test
 * and deleted afterwards. When the broker cannot be reached the test is skipped with a message,
 * except under {@code CI=true}, where it fails.
 */
interface BrokerFixture extends AutoCloseable {

  /** A message as the broker holds it. */
  record Received(String id, byte[] body, Map<String, String> headers) {}

  /** @return whether the broker itself drops a re-published message with the same id */
  boolean dedupesById();

  /** @return an intent to this test's destination */
  Intent intent(byte[] body);

  /** @return an intent that no queue or stream takes (unroutable / no stream for the subject) */
  Intent unroutableIntent(byte[] body);

  /** @return the relay's transport to this broker */
  IntentTransport transport();

  /** @return every message stored at this test's destination so far, waiting up to {@code wait} for {@code atLeast} */
  List<Received> published(int atLeast, Duration wait) throws Exception;

  /** Publishes a message straight to the consumer's source, with this id (or none when {@code null}). */
  void publishRaw(String id, byte[] body) throws Exception;

  /**
   * Starts the idempotent consumer on the source; closing the result stops it. {@code verdicts}
   * hears each verdict after the broker was told.
   */
  AutoCloseable consume(IdempotentConsumer consumer, Consumer<Verdict> verdicts) throws Exception;

  /**
   * Takes one message from the source, processes it through the consumer (its effect and key
   * commit), then drops the connection without acknowledging it: a crash between commit and ack.
   */
  void processThenCrashBeforeAck(IdempotentConsumer consumer) throws Exception;

  /** @return how many messages are waiting or unacknowledged at the source */
  long outstanding() throws Exception;

  /** @return the dead letters so far, waiting up to {@code wait} for {@code atLeast} */
  List<Received> deadLetters(int atLeast, Duration wait) throws Exception;

  /** @return the header that carries the dead letter's reason */
  String reasonHeader();

  static boolean underCi() {
    return "true".equalsIgnoreCase(System.getenv("CI"));
  }

  /** Fails under CI, else skips with a visible message. */
  static RuntimeException unreachable(String what, Exception e) {
    String message = what + " is not reachable (" + e + ")";
    if (underCi()) {
      return new IllegalStateException(message + "; under CI=true a missing broker is a failure", e);
    }
    System.err.println("[idem-outbox] SKIPPED: " + message + "; start it to run this suite");
    Assumptions.abort(message);
    return new IllegalStateException(message);
  }
}
