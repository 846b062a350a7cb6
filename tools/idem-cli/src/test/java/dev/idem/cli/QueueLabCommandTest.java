package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.cli.queue.QueueLab;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code idem lab --queue} in-process against the live brokers ({@code IDEM_TEST_RABBITMQ_URI},
 * default {@code amqp://guest:guest@127.0.0.1:5672}; {@code IDEM_TEST_NATS_URL}, default {@code
 * nats://127.0.0.1:4222}). Without a reachable broker the test is skipped with a {@code SKIPPED:}
 * line; under {@code CI=true} it fails.
 */
class QueueLabCommandTest {

  private static final String RABBITMQ =
      System.getenv().getOrDefault("IDEM_TEST_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:5672");
  private static final String NATS = System.getenv().getOrDefault("IDEM_TEST_NATS_URL", "nats://127.0.0.1:4222");

  @TempDir Path dir;

  private final CliRun cli = new CliRun();

  @Test
  void onRabbitMqEveryCrashGivesNaiveDuplicatesAndOneProtectedEffect() {
    requireBroker("RabbitMQ", RABBITMQ, 5672);
    int status = cli.run("lab", "--queue", "--broker-url", RABBITMQ, "--db", "jdbc:sqlite:" + dir.resolve("q.db"));
    assertThat(status).as(cli.out + "\n" + cli.err).isZero();
    assertThat(cli.out.toString())
        .contains("broker: RabbitMQ")
        .containsPattern("consumer-crash\\s+naive\\s+consumer, after its commit, before its ack\\s+1\\s+1\\s+2\\s+2\\s+duplicate effect")
        .containsPattern("consumer-crash\\s+protected\\s+consumer, after its commit, before its ack\\s+1\\s+1\\s+2\\s+1\\s+ok")
        .containsPattern("relay-crash\\s+naive\\s+.*\\s2\\s+2\\s+2\\s+2\\s+duplicate effect")
        .containsPattern("relay-crash\\s+protected\\s+.*\\s2\\s+2\\s+2\\s+1\\s+ok")
        .containsPattern("send-before-commit\\s+naive\\s+.*\\s2\\s+2\\s+-\\s+1\\s+duplicate message")
        .containsPattern("send-before-commit\\s+protected\\s+.*\\s1\\s+1\\s+-\\s+1\\s+ok")
        .contains("protected: ok");
  }

  @Test
  void onJetStreamTheStreamDropsTheRepublishAndJsonHasTheDocumentedShape() throws Exception {
    requireBroker("NATS JetStream", NATS, 4222);
    int status = cli.run("lab", "--queue", "--broker", "jetstream", "--broker-url", NATS, "--json",
        "--db", "jdbc:sqlite:" + dir.resolve("q.db"));
    assertThat(status).as(cli.out + "\n" + cli.err).isZero();
    JsonNode root = new ObjectMapper().readTree(cli.out.toString());
    assertThat(root.get("broker").asText()).startsWith("NATS JetStream");
    assertThat(root.get("database").asText()).startsWith("SQLite");
    assertThat(root.get("protectedOk").asBoolean()).isTrue();
    JsonNode rows = root.get("results");
    assertThat(rows).hasSize(6);
    // scenario, variant, published, stored, deliveries (-1: null), effects
    long[][] expected = {{1, 1, 2, 2}, {1, 1, 2, 1}, {2, 1, 1, 1}, {2, 1, 1, 1}, {2, 2, -1, 1}, {1, 1, -1, 1}};
    for (int i = 0; i < 6; i++) {
      JsonNode r = rows.get(i);
      assertThat(r.get("variant").asText()).isEqualTo(i % 2 == 0 ? "naive" : "protected");
      assertThat(new long[] {r.get("published").asLong(), r.get("stored").asLong(),
          r.get("deliveries").isNull() ? -1 : r.get("deliveries").asLong(), r.get("effects").asLong()})
          .as(r.toString()).containsExactly(expected[i]);
      assertThat(r.get("ok").asBoolean()).as(r.toString()).isEqualTo(i % 2 == 1 || i == 2);
    }
    assertThat(rows.get(4).get("verdict").asText()).isEqualTo("duplicate message");
  }

  @Test
  void anUnreachableBrokerIsExitTwoWithAClearErrorAndNoStackTrace() {
    int status = cli.run("lab", "--queue", "--broker-url", "amqp://guest:secret@127.0.0.1:1",
        "--db", "jdbc:sqlite:" + dir.resolve("q.db"));
    assertThat(status).isEqualTo(2);
    assertThat(cli.err.toString())
        .startsWith("idem lab --queue: cannot connect to RabbitMQ at amqp://guest:***@127.0.0.1:1")
        .doesNotContain("secret")
        .doesNotContain("\tat ");
    assertThat(cli.out.toString()).isEmpty();
  }

  @Test
  void queueOptionsWithoutQueueOrWithOtherLabsAreRefused() {
    assertThat(cli.run("lab", "--broker", "jetstream")).isEqualTo(2);
    assertThat(cli.err.toString()).contains("--broker and --broker-url apply to --queue only");
    assertThat(cli.run("lab", "--queue", "--broker", "pulsar")).isEqualTo(2);
    assertThat(cli.err.toString()).contains("--broker must be rabbitmq, jetstream or kafka, was 'pulsar'");
    assertThat(cli.run("lab", "--queue", "--http")).isEqualTo(2);
    assertThat(cli.err.toString()).contains("--http and --concurrency do not apply");
  }

  @Test
  void aProtectedRowThatDoesNotHoldFailsTheReportButANaiveOneDoesNot() {
    QueueLab.Row naiveDuplicate = new QueueLab.Row("consumer-crash", "naive", "x", 1, 1, 2, 2, "duplicate effect", false);
    QueueLab.Row protectedOk = new QueueLab.Row("consumer-crash", "protected", "x", 1, 1, 2, 1, "ok", true);
    QueueLab.Row protectedDuplicate = new QueueLab.Row("relay-crash", "protected", "x", 2, 2, 2, 2, "duplicate effect", false);
    assertThat(new QueueLab.Report("b", "u", "d", "u", List.of(naiveDuplicate, protectedOk)).protectedOk()).isTrue();
    assertThat(new QueueLab.Report("b", "u", "d", "u", List.of(naiveDuplicate, protectedOk, protectedDuplicate)).protectedOk())
        .isFalse();
    assertThat(new QueueLab.Report("b", "u", "d", "u", List.of(naiveDuplicate)).protectedOk()).isFalse();
  }

  /** Skips visibly when the broker's port does not answer, or fails under CI=true. */
  private static void requireBroker(String what, String url, int defaultPort) {
    URI uri = URI.create(url);
    int port = uri.getPort() < 0 ? defaultPort : uri.getPort();
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(uri.getHost(), port), 2000);
    } catch (Exception e) {
      String message = what + " at " + uri.getHost() + ":" + port + " is not reachable (" + e + ")";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message + "; under CI=true a missing broker is a failure", e);
      }
      System.err.println("[idem-cli] SKIPPED: " + message + "; start it to run the queue lab test");
      Assumptions.abort(message);
    }
  }
}
