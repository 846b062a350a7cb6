package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.kafka.KafkaBroker;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code idem lab --queue --broker kafka} in-process against the KRaft broker the test starts in
 * this JVM; the lab's child processes connect to it over loopback. Under {@code CI=true} a broker
 * that cannot start is a failure.
 */
class QueueLabKafkaTest {

  @TempDir Path dir;

  private final CliRun cli = new CliRun();

  @Test
  void onKafkaEveryCrashGivesNaiveDuplicatesAndOneProtectedEffect() throws Exception {
    String servers = KafkaBroker.bootstrapServers();
    int status = cli.run("lab", "--queue", "--broker", "kafka", "--broker-url", servers, "--json",
        "--db", "jdbc:sqlite:" + dir.resolve("q.db"));
    assertThat(status).as(cli.out + "\n" + cli.err).isZero();
    JsonNode root = new ObjectMapper().readTree(cli.out.toString());
    assertThat(root.get("broker").asText()).startsWith("Kafka (cluster ");
    assertThat(root.get("protectedOk").asBoolean()).isTrue();
    JsonNode rows = root.get("results");
    assertThat(rows).hasSize(6);
    // published, stored, deliveries (-1: null), effects: as on RabbitMQ, Kafka keeps both copies of a re-publish
    long[][] expected = {{1, 1, 2, 2}, {1, 1, 2, 1}, {2, 2, 2, 2}, {2, 2, 2, 1}, {2, 2, -1, 1}, {1, 1, -1, 1}};
    String[] verdicts = {"duplicate effect", "ok", "duplicate effect", "ok", "duplicate message", "ok"};
    for (int i = 0; i < 6; i++) {
      JsonNode r = rows.get(i);
      assertThat(r.get("variant").asText()).isEqualTo(i % 2 == 0 ? "naive" : "protected");
      assertThat(new long[] {r.get("published").asLong(), r.get("stored").asLong(),
          r.get("deliveries").isNull() ? -1 : r.get("deliveries").asLong(), r.get("effects").asLong()})
          .as(r.toString()).containsExactly(expected[i]);
      assertThat(r.get("verdict").asText()).as(r.toString()).isEqualTo(verdicts[i]);
    }
  }

  @Test
  void anUnreachableKafkaIsExitTwoWithAClearError() {
    int status = cli.run("lab", "--queue", "--broker", "kafka", "--broker-url", "127.0.0.1:1",
        "--db", "jdbc:sqlite:" + dir.resolve("q.db"));
    assertThat(status).isEqualTo(2);
    assertThat(cli.err.toString()).startsWith("idem lab --queue: cannot connect to Kafka at 127.0.0.1:1")
        .doesNotContain("\tat ");
  }
}
