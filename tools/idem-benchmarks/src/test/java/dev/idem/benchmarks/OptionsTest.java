package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The harness's command line on picocli: the same options, sizes and errors as before. */
class OptionsTest {

  @Test
  void noArgumentsIsTheDefaultModeOnEveryBackend() {
    Options o = Options.parse();
    assertEquals(Options.Mode.DEFAULT, o.mode);
    assertEquals(Set.copyOf(Options.ALL_DATABASES), o.databases);
    assertEquals(Path.of("docs/reports"), o.out);
    assertTrue(o.jmh);
    assertEquals(List.of(1, 4, 16, 64), o.clients);
    assertTrue(o.overrides.isEmpty());
  }

  @Test
  void quickSetsTheSmallSizesAndOverridesChangeSingleOnesAndAreReported() {
    Options o = Options.parse("--quick", "--clients", "2,3", "--warmup", "0.5", "--no-jmh", "--out", "target/x");
    assertEquals(Options.Mode.QUICK, o.mode);
    assertEquals(List.of(2, 3), o.clients);
    assertEquals(Duration.ofMillis(500), o.warmup);
    assertEquals(Duration.ofMillis(500), o.measure); // the quick mode's own
    assertFalse(o.jmh);
    assertEquals(Path.of("target/x"), o.out);
    assertEquals(List.of("--clients 2,3", "--warmup 0.5"), o.overrides);
    assertEquals(List.of("--quick", "--clients", "2,3", "--warmup", "0.5", "--no-jmh", "--out", "target/x"), o.argv);
  }

  @Test
  void databaseAliasesAreAcceptedAndNoneMeansJmhOnly() {
    assertEquals(Set.of("postgres", "mariadb"), Options.parse("--db", "PostgreSQL,mysql").databases);
    assertTrue(Options.parse("--db", "none").databases.isEmpty());
  }

  @Test
  void wrongCommandLinesAreUsageErrorsWithAMessage() {
    for (String[] args : List.of(
        new String[] {"--db", "oracle"},
        new String[] {"--quick", "--long"},
        new String[] {"--clients", "0"},
        new String[] {"--duration", "4000"},
        new String[] {"--race-rounds", "many"},
        new String[] {"--frobnicate"})) {
      Options.UsageException e = assertThrows(Options.UsageException.class, () -> Options.parse(args));
      assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), String.join(" ", args));
    }
  }

  @Test
  void helpIsAUsageExceptionWithoutAMessageAndTheUsageListsEveryOption() {
    assertNull(assertThrows(Options.UsageException.class, () -> Options.parse("--help")).getMessage());
    String usage = Options.usage();
    for (String option : List.of("--quick", "--long", "--db", "--out", "--no-jmh", "--workloads", "--postgres-url",
        "--mariadb-url", "--redis-url", "--sqlite-dir", "--clients", "--warmup", "--duration", "--race-clients",
        "--race-rounds", "--shape-preload")) {
      assertTrue(usage.contains(option), option);
    }
  }
}
