package dev.idem.benchmarks;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The statistics of an interleaved A/B benchmark made of rounds (HttpLoad): every workload runs once
 * per round, so each round gives one sample per workload and one ratio per workload against the
 * baseline of the same round. A cell is summarised by the median over rounds and the spread
 * (minimum to maximum); its ratio is the median of the per-round ratios, not the ratio of the
 * medians. Pure functions on immutable values: thread-safe.
 */
final class Rounds {

  private Rounds() {}

  /**
   * One round's measurement of one workload at one client count.
   *
   * @param round the round, from 0
   * @param opsPerSecond operations that ended in the measured window per second; NaN if unknown
   * @param p50Millis median latency in milliseconds; NaN if nothing was recorded
   * @param p99Millis 99th percentile in milliseconds; NaN if nothing was recorded
   * @param p999Millis 99.9th percentile in milliseconds; NaN if nothing was recorded
   * @param errors failed requests, 0 or more
   */
  record Sample(int round, double opsPerSecond, double p50Millis, double p99Millis, double p999Millis, long errors) {}

  /**
   * The median and the range of some values, NaN ignored.
   *
   * @param median the median (the mean of the two middle values for an even count); NaN if {@code count} is 0
   * @param min the smallest value; NaN if {@code count} is 0
   * @param max the largest value; NaN if {@code count} is 0
   * @param count how many values were not NaN
   */
  record Spread(double median, double min, double max, int count) {

    /** @return the median and range of {@code values}, NaN values left out */
    static Spread of(List<Double> values) {
      double[] v = values.stream().mapToDouble(Double::doubleValue).filter(d -> !Double.isNaN(d)).sorted().toArray();
      if (v.length == 0) {
        return new Spread(Double.NaN, Double.NaN, Double.NaN, 0);
      }
      int mid = v.length / 2;
      double median = v.length % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
      return new Spread(median, v[0], v[v.length - 1], v.length);
    }
  }

  /**
   * One cell (workload, client count) over its rounds.
   *
   * @param rounds how many samples the cell has
   * @param ops median and range of ops/s
   * @param p50Millis median over rounds of the per-round p50
   * @param p99Millis median over rounds of the per-round p99
   * @param p999Millis median over rounds of the per-round p99.9
   * @param errors errors summed over the rounds
   * @param ratio median and range of the per-round ratios to the baseline (NaN if no round has both)
   */
  record Summary(int rounds, Spread ops, double p50Millis, double p99Millis, double p999Millis, long errors, Spread ratio) {}

  /**
   * @param cell the samples of one workload at one client count, one per round
   * @param baseline the baseline's samples at the same client count, one per round
   * @return the cell's medians and spreads; its ratio is the median of {@link #perRoundRatios}
   */
  static Summary summarize(List<Sample> cell, List<Sample> baseline) {
    return new Summary(cell.size(),
        Spread.of(cell.stream().map(Sample::opsPerSecond).toList()),
        Spread.of(cell.stream().map(Sample::p50Millis).toList()).median(),
        Spread.of(cell.stream().map(Sample::p99Millis).toList()).median(),
        Spread.of(cell.stream().map(Sample::p999Millis).toList()).median(),
        cell.stream().mapToLong(Sample::errors).sum(),
        Spread.of(perRoundRatios(cell, baseline)));
  }

  /**
   * @return for each round of {@code cell}, in its order, its ops/s divided by the baseline's ops/s of
   *     the same round; a round the baseline lacks, or where the baseline made no operation, gives NaN
   */
  static List<Double> perRoundRatios(List<Sample> cell, List<Sample> baseline) {
    Map<Integer, Double> base = new HashMap<>();
    for (Sample b : baseline) {
      base.put(b.round(), b.opsPerSecond());
    }
    List<Double> ratios = new ArrayList<>();
    for (Sample s : cell) {
      Double b = base.get(s.round());
      ratios.add(b == null || !(b > 0) ? Double.NaN : s.opsPerSecond() / b);
    }
    return ratios;
  }

  /**
   * The order of a round: {@code items} rotated left by {@code round}, so round 0 runs them in list
   * order, round 1 starts with the second, and so on (wrapping around); over {@code items.size()}
   * rounds every item comes first once.
   *
   * @param round 0 or more
   * @return a new list
   */
  static <T> List<T> order(List<T> items, int round) {
    if (round < 0) {
      throw new IllegalArgumentException("round < 0: " + round);
    }
    List<T> out = new ArrayList<>(items.size());
    for (int i = 0; i < items.size(); i++) {
      out.add(items.get((i + round) % items.size()));
    }
    return out;
  }
}
