package dev.idem.core.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The property runner checks what it says, and a failure tells how to reproduce it. */
class PropertiesTest {

  @Test
  void checksEdgeCasesFirstThenTheGeneratedCases() {
    List<Long> seen = new ArrayList<>();
    Properties.Run run =
        Properties.run("p", 42, 100, r -> r.nextLong(), List.of(7L, 8L), seen::add);
    assertThat(seen).hasSize(102).startsWith(7L, 8L);
    assertThat(run.edgeCasesChecked()).isEqualTo(2);
    assertThat(run.generatedChecked()).isEqualTo(100);
  }

  @Test
  void theSameSeedGeneratesTheSameCases() {
    List<Long> first = new ArrayList<>();
    List<Long> second = new ArrayList<>();
    List<Long> other = new ArrayList<>();
    Properties.run("p", 42, 50, Gen::longs, List.of(), first::add);
    Properties.run("p", 42, 50, Gen::longs, List.of(), second::add);
    Properties.run("p", 43, 50, Gen::longs, List.of(), other::add);
    assertThat(second).isEqualTo(first);
    assertThat(other).isNotEqualTo(first);
  }

  @Test
  void rejectedCasesDoNotCount() {
    List<Integer> checked = new ArrayList<>();
    Properties.Run run =
        Properties.run(
            "p",
            1,
            100,
            r -> r.nextInt(10),
            List.of(1, 2),
            i -> {
              Properties.assume(i % 2 == 0);
              checked.add(i);
            });
    assertThat(run.edgeCasesChecked()).isEqualTo(1);
    assertThat(run.generatedChecked()).isEqualTo(100);
    assertThat(checked).hasSize(101).allMatch(i -> i % 2 == 0);
    assertThat(run.rejected()).isPositive();
  }

  @Test
  void aPropertyThatRejectsEverythingFails() {
    assertThatThrownBy(
            () -> Properties.run("never", 1, 10, r -> 0, List.of(), i -> Properties.assume(false)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("too many cases rejected");
  }

  @Test
  void aFailureNamesThePropertyTheSeedTheCaseAndTheValue() {
    AssertionError cause = new AssertionError("expected 1 but was 2");
    assertThatThrownBy(
            () ->
                Properties.run(
                    "small",
                    -77,
                    1000,
                    r -> r.nextInt(100),
                    List.of(),
                    i -> {
                      if (i > 90) {
                        throw cause;
                      }
                    }))
        .isInstanceOf(AssertionError.class)
        .hasMessageStartingWith("property small failed on generated case ")
        .hasMessageContaining("seed -77 (reproduce with -Didem.seed=-77)")
        .hasMessageContaining("cause: java.lang.AssertionError:\n  expected 1 but was 2")
        .hasMessageMatching("(?s).*value: 9[1-9]\\R.*")
        .cause()
        .isSameAs(cause);
  }

  @Test
  void aFailingEdgeCaseIsReportedAsOne() {
    assertThatThrownBy(
            () ->
                Properties.run(
                    "edges",
                    5,
                    10,
                    r -> "x",
                    List.of("ok", "\u0000\ud800"),
                    s -> assertThat(s).isEqualTo("ok")))
        .hasMessageStartingWith("property edges failed on edge case 1 of 2")
        .hasMessageContaining("value: \\u0000\\ud800");
  }

  @Test
  void theSeedComesFromTheSystemProperty() {
    String before = System.getProperty(Properties.SEED_PROPERTY);
    try {
      System.setProperty(Properties.SEED_PROPERTY, "-123");
      assertThat(Properties.seed()).isEqualTo(-123);
      System.setProperty(Properties.SEED_PROPERTY, "x");
      assertThatThrownBy(Properties::seed).hasMessageContaining("-Didem.seed must be a long");
    } finally {
      if (before == null) {
        System.clearProperty(Properties.SEED_PROPERTY);
      } else {
        System.setProperty(Properties.SEED_PROPERTY, before);
      }
    }
  }

  @Test
  void describeShowsArraysAndEscapesWhatWouldNotPrint() {
    assertThat(Properties.describe(new byte[] {1, -1})).isEqualTo("[1, -1]");
    assertThat(Properties.describe("a\n\u00e9\ud83d\ude00")).isEqualTo(
        "a\\u000a\\u00e9\\ud83d\\ude00");
    assertThat(Properties.describe(null)).isEqualTo("null");
  }
}
