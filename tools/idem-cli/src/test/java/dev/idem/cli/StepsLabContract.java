package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.lab.jdbc.JdbcTarget;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code idem lab --steps} on a real database: every row's counts, naive and protected, as the
 * command prints them with {@code --json}. A backend runs it by subclassing and returning its
 * database from {@link #target()}; the scenarios are never copied per backend.
 */
abstract class StepsLabContract {

  /** @return the database the lab runs on, a fresh one per test class */
  protected abstract JdbcTarget target();

  /** Per row: {chargeCalls, rides, charges, receipts}, naive then protected. */
  private static final Map<String, long[][]> EXPECTED = Map.of(
      // killed after the ride: the naive retry records a second ride; the protected one resumes at the charge
      "after-ride", new long[][] {{1, 2, 1, 1}, {1, 1, 1, 1}},
      // the charge made, its answer not recorded: the protected retry calls again with the same derived key
      "charged-unrecorded", new long[][] {{2, 2, 2, 1}, {2, 1, 1, 1}},
      // the charge recorded: the completer finishes the protected operation, the retry replays
      "after-charge", new long[][] {{2, 2, 2, 1}, {1, 1, 1, 1}},
      "after-receipt", new long[][] {{2, 2, 2, 2}, {1, 1, 1, 1}},
      // nothing killed, the charge's first answer lost by the proxy
      "lost-charge-answer", new long[][] {{2, 2, 2, 1}, {2, 1, 1, 1}});

  @Test
  void everyCrashGivesNaiveDuplicatesAndOneProtectedRideChargeAndReceipt() throws Exception {
    CliRun cli = new CliRun();
    int status = cli.run("lab", "--steps", "--json", "--db", target().url());
    assertThat(status).as(cli.out + "\n" + cli.err).isZero();
    JsonNode root = new ObjectMapper().readTree(cli.out.toString());
    assertThat(root.get("protectedOk").asBoolean()).isTrue();
    JsonNode rows = root.get("results");
    assertThat(rows).hasSize(2 * EXPECTED.size());
    for (JsonNode r : rows) {
      String scenario = r.get("scenario").asText();
      boolean naive = r.get("variant").asText().equals("naive");
      long[] expected = EXPECTED.get(scenario)[naive ? 0 : 1];
      assertThat(new long[] {r.get("chargeCalls").asLong(), r.get("rides").asLong(), r.get("charges").asLong(),
          r.get("receipts").asLong()}).as(r.toString()).containsExactly(expected);
      assertThat(r.get("ok").asBoolean()).as(r.toString()).isEqualTo(!naive);
      assertThat(r.get("verdict").asText()).as(r.toString()).isEqualTo(naive ? duplicates(expected) : "ok");
      assertThat(r.get("finishedBy").asText())
          .isEqualTo(!naive && scenario.equals("after-charge") ? "completer" : "retry");
    }
  }

  private static String duplicates(long[] counts) {
    StringBuilder sb = new StringBuilder();
    String[] what = {"ride", "charge", "receipt"};
    for (int i = 0; i < 3; i++) {
      if (counts[i + 1] > 1) {
        sb.append(sb.length() == 0 ? "" : ", ").append(counts[i + 1]).append(' ').append(what[i]).append('s');
      }
    }
    return sb.toString();
  }
}
