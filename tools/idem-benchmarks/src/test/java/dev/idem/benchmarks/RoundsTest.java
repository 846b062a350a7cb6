package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The statistics of HttpLoad's interleaved rounds: medians, spreads, per-round ratios, the rotated order. */
class RoundsTest {

  private static Rounds.Sample sample(int round, double ops) {
    return new Rounds.Sample(round, ops, ops / 1000, ops / 100, ops / 10, round);
  }

  @Test
  void medianOfAnOddCountIsTheMiddleValueAndOfAnEvenCountTheMeanOfTheTwoMiddleOnes() {
    Rounds.Spread odd = Rounds.Spread.of(List.of(30.0, 10.0, 20.0));
    assertEquals(new Rounds.Spread(20.0, 10.0, 30.0, 3), odd);
    Rounds.Spread even = Rounds.Spread.of(List.of(40.0, 10.0, 30.0, 20.0));
    assertEquals(new Rounds.Spread(25.0, 10.0, 40.0, 4), even);
  }

  @Test
  void nanValuesAreLeftOutAndNoValueGivesNan() {
    assertEquals(new Rounds.Spread(2.0, 1.0, 3.0, 3), Rounds.Spread.of(List.of(1.0, Double.NaN, 3.0, 2.0)));
    Rounds.Spread none = Rounds.Spread.of(List.of(Double.NaN));
    assertEquals(0, none.count());
    assertTrue(Double.isNaN(none.median()) && Double.isNaN(none.min()) && Double.isNaN(none.max()));
  }

  @Test
  void theRatioIsTheMedianOfThePerRoundRatiosNotTheRatioOfTheMedians() {
    // without Idem: 100, 200, 400 ops/s in rounds 1..3; with Idem: 90, 100, 380.
    // per-round ratios 0.9, 0.5, 0.95 -> median 0.9, range 0.5..0.95;
    // the ratio of the medians would be 100 / 200 = 0.5.
    List<Rounds.Sample> base = List.of(sample(1, 100), sample(2, 200), sample(3, 400));
    List<Rounds.Sample> with = List.of(sample(3, 380), sample(1, 90), sample(2, 100));

    Rounds.Summary s = Rounds.summarize(with, base);

    assertEquals(3, s.rounds());
    assertEquals(new Rounds.Spread(100.0, 90.0, 380.0, 3), s.ops());
    assertEquals(0.9, s.ratio().median(), 1e-12);
    assertEquals(0.5, s.ratio().min(), 1e-12);
    assertEquals(0.95, s.ratio().max(), 1e-12);
    assertEquals(0.100, s.p50Millis(), 1e-12); // median of 0.38, 0.09, 0.10
    assertEquals(1.00, s.p99Millis(), 1e-12);
    assertEquals(10.0, s.p999Millis(), 1e-12);
    assertEquals(1 + 2 + 3, s.errors()); // summed
  }

  @Test
  void aRoundTheBaselineLacksOrWhereItMadeNothingHasNoRatio() {
    List<Rounds.Sample> base = List.of(sample(1, 100), sample(2, 0));
    List<Rounds.Sample> with = List.of(sample(1, 50), sample(2, 70), sample(3, 80));

    List<Double> ratios = Rounds.perRoundRatios(with, base);

    assertEquals(0.5, ratios.get(0), 1e-12);
    assertTrue(Double.isNaN(ratios.get(1)));
    assertTrue(Double.isNaN(ratios.get(2)));
    assertEquals(new Rounds.Spread(0.5, 0.5, 0.5, 1), Rounds.summarize(with, base).ratio());
  }

  @Test
  void theBaselineAgainstItselfIsOneInEveryRound() {
    List<Rounds.Sample> base = List.of(sample(1, 123), sample(2, 456));
    assertEquals(new Rounds.Spread(1.0, 1.0, 1.0, 2), Rounds.summarize(base, base).ratio());
  }

  @Test
  void theOrderRotatesByOneEachRoundSoEveryWorkloadComesFirstOnce() {
    List<String> loads = List.of("a", "b", "c", "d", "e");
    assertEquals(loads, Rounds.order(loads, 0));
    assertEquals(List.of("b", "c", "d", "e", "a"), Rounds.order(loads, 1));
    assertEquals(List.of("c", "d", "e", "a", "b"), Rounds.order(loads, 2));
    assertEquals(loads, Rounds.order(loads, 5));
    Set<String> first = new HashSet<>();
    List<Integer> positionsOfA = new ArrayList<>();
    for (int round = 0; round < loads.size(); round++) {
      List<String> order = Rounds.order(loads, round);
      assertEquals(Set.copyOf(loads), Set.copyOf(order)); // each workload once per round
      first.add(order.get(0));
      positionsOfA.add(order.indexOf("a"));
    }
    assertEquals(Set.copyOf(loads), first);
    assertEquals(List.of(0, 4, 3, 2, 1), positionsOfA);
    assertThrows(IllegalArgumentException.class, () -> Rounds.order(loads, -1));
  }
}
