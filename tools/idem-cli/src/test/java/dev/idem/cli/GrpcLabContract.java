package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.lab.jdbc.JdbcTarget;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * {@code idem lab --grpc --json} on a real database: the seed article's table over gRPC on a Netty
 * server, naive against protected, every count read from the command's JSON (counted there with
 * SQL). A backend runs it by subclassing and returning its database from {@link #target()}.
 */
abstract class GrpcLabContract {

  /** @return the database the lab runs on, a fresh one per test class */
  protected abstract JdbcTarget target();

  private static final int CONCURRENCY = 8;

  /** Per scenario: {naive effects, protected effects}. */
  private static final Map<String, long[]> EFFECTS = Map.of(
      "lost-response", new long[] {2, 1},
      "concurrent", new long[] {CONCURRENCY, 1},
      "key-reuse", new long[] {2, 1},
      "distinct-keys", new long[] {2, 2});

  @Test
  void naiveDuplicatesAndProtectedHoldsOverGrpc() throws Exception {
    CliRun cli = new CliRun();
    int status = cli.run("lab", "--grpc", "--json", "--concurrency", String.valueOf(CONCURRENCY), "--db", target().url());
    assertThat(status).as(cli.out + "\n" + cli.err).isZero();
    JsonNode root = new ObjectMapper().readTree(cli.out.toString());
    assertThat(root.get("protectedOk").asBoolean()).isTrue();
    assertThat(root.get("transport").asText()).contains("gRPC").contains("Netty");
    JsonNode rows = root.get("results");
    assertThat(rows).hasSize(8);
    for (JsonNode r : rows) {
      String scenario = r.get("scenario").asText();
      boolean naive = r.get("variant").asText().equals("naive");
      assertThat(r.get("effects").asLong()).as(r.toString()).isEqualTo(EFFECTS.get(scenario)[naive ? 0 : 1]);
      assertThat(r.get("errors").asInt()).as(r.toString()).isZero();
      Set<Long> ids = new HashSet<>();
      r.get("ids").forEach(id -> ids.add(id.asLong()));
      switch (scenario) {
        case "lost-response":
          // the first answer lost after the commit, the channel's retry carrying the same key
          assertThat(r.get("lostResponses").asInt()).as(r.toString()).isEqualTo(1);
          assertThat(r.get("attempts").asInt()).as(r.toString()).isEqualTo(2);
          assertThat(ids).as(r.toString()).hasSize(naive ? 2 : 1);
          break;
        case "concurrent":
          assertThat(r.get("ids")).as(r.toString()).hasSize(CONCURRENCY);
          assertThat(ids).as(r.toString()).hasSize(naive ? CONCURRENCY : 1);
          break;
        case "key-reuse":
          assertThat(r.get("rejected").asInt()).as(r.toString()).isEqualTo(naive ? 0 : 1);
          break;
        default:
          assertThat(ids).as(r.toString()).hasSize(2);
      }
      assertThat(r.get("verdict").asText()).as(r.toString())
          .isEqualTo(naive && !scenario.equals("distinct-keys") ? "duplicate effect" : "ok");
    }
    assertThat(rows.findValuesAsText("scenario")).containsExactly(
        List.of("lost-response", "lost-response", "concurrent", "concurrent", "key-reuse", "key-reuse",
            "distinct-keys", "distinct-keys").toArray(String[]::new));
  }

  @Test
  void theTableNamesTheTransportAndTheProtectedVerdict() {
    CliRun cli = new CliRun();
    int status = cli.run("lab", "--grpc", "--concurrency", "4", "--db", target().url());
    assertThat(status).as(cli.out + "\n" + cli.err).isZero();
    assertThat(cli.out.toString())
        .contains("transport: gRPC over Netty")
        .containsPattern("lost-response\\s+naive\\s+2\\s+2\\s")
        .containsPattern("lost-response\\s+protected\\s+2\\s+1\\s")
        .containsPattern("concurrent\\s+protected\\s+4\\s+1\\s")
        .contains("protected: ok");
  }
}
