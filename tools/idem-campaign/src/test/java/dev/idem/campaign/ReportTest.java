package dev.idem.campaign;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report's sections: one per set of stores and modes, so that runs of different stores are kept side by side. */
class ReportTest {

  @TempDir Path dir;

  private static RunResult result(String store, String mode, int crossScope, Map<String, Integer> fuzz5xx) {
    return new RunResult(store, mode, 10, 10, Map.of(), 0, 12, Map.of("service-kill", 1), 0, 0, 0, 0, 0, Map.of(), Map.of(), crossScope,
        30, fuzz5xx, Map.of(400, 30), Duration.ofSeconds(1));
  }

  @Test
  void aRunOfOtherStoresKeepsTheSectionOfTheDefaultStoresAndAReRunReplacesOnlyItsOwn() throws Exception {
    Path doc = dir.resolve("reliability.md");
    Files.writeString(doc, "# Reliability\n\n" + Report.BEGIN + "\nold default run\n" + Report.END + "\n\nafter\n", StandardCharsets.UTF_8);

    String redis1 = Report.markdown(List.of(result("redis", "lease", 0, Map.of())), List.of("redis"), List.of("transactional", "lease"),
        "--stores redis", 1, 8, Duration.ofSeconds(5), Duration.ofMinutes(1));
    Report.replaceSection(doc, redis1);
    String redis2 = Report.markdown(List.of(result("redis", "lease", 0, Map.of())), List.of("redis"), List.of("lease"),
        "--stores redis --modes lease", 2, 8, Duration.ofSeconds(5), Duration.ofMinutes(1));
    Report.replaceSection(doc, redis2);

    String text = Files.readString(doc, StandardCharsets.UTF_8);
    assertThat(text).contains("old default run").contains("after").contains(redis2).doesNotContain("--stores redis`");
    assertThat(text.indexOf("fault-campaign:begin redis/lease")).isEqualTo(text.lastIndexOf("fault-campaign:begin redis/lease"));
    assertThat(redis2).startsWith("<!-- fault-campaign:begin redis/lease ").contains("### Last long run of redis/lease")
        .endsWith("<!-- fault-campaign:end redis/lease -->\n");

    String defaults = Report.markdown(List.of(result("sqlite", "lease", 0, Map.of())), List.of("sqlite", "postgresql"),
        List.of("transactional", "lease"), "", 3, 8, Duration.ofSeconds(5), Duration.ofMinutes(1));
    Report.replaceSection(doc, defaults);
    text = Files.readString(doc, StandardCharsets.UTF_8);
    assertThat(text).doesNotContain("old default run").contains(defaults).contains(redis2);
  }

  @Test
  void crossScopeReplaysAndFuzzed5xxAreViolations() {
    assertThat(Report.violations(List.of(result("redis", "lease", 1, Map.of())))).singleElement().asString().contains("1 cross-scope replays");
    assertThat(Report.violations(List.of(result("sqlite", "lease", 0, Map.of("multipart/form-data -> 500 Internal Server Error", 3)))))
        .singleElement().asString().contains("3 5xx answers to fuzzed requests");
    assertThat(Report.violations(List.of(result("sqlite", "lease", 0, Map.of())))).isEmpty();
  }
}
