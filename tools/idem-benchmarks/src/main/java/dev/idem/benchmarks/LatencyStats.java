package dev.idem.benchmarks;

import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * Latencies of one client or of a whole run, kept in an HdrHistogram: nanoseconds from 1 ns to 10
 * minutes at 3 significant digits, so a reported percentile is within 0.1% of the exact sample
 * value, in constant memory however many operations a run does. Not thread-safe: one per client
 * thread, {@linkplain #add merged} after the run.
 */
public final class LatencyStats {

  static final long MAX_NANOS = TimeUnit.MINUTES.toNanos(10);

  private final Histogram histogram = new Histogram(1, MAX_NANOS, 3);

  /** Records one latency; values outside 1 ns..10 min are clamped to the range. */
  public void recordNanos(long nanos) {
    histogram.recordValue(Math.max(1, Math.min(nanos, MAX_NANOS)));
  }

  /** Adds every sample of {@code other} to this one. */
  public void add(LatencyStats other) {
    histogram.add(other.histogram);
  }

  /** @return how many latencies were recorded */
  public long count() {
    return histogram.getTotalCount();
  }

  /**
   * @param percentile 0 to 100, e.g. 99.9
   * @return the latency at that percentile in milliseconds (the bucket's highest equivalent value,
   *     never below the exact sample), or NaN when nothing was recorded
   */
  public double percentileMillis(double percentile) {
    return count() == 0 ? Double.NaN : histogram.getValueAtPercentile(percentile) / 1e6;
  }

  /** @return the mean latency in milliseconds, or NaN when nothing was recorded */
  public double meanMillis() {
    return count() == 0 ? Double.NaN : histogram.getMean() / 1e6;
  }

  /** @return the largest latency in milliseconds, or NaN when nothing was recorded */
  public double maxMillis() {
    return count() == 0 ? Double.NaN : histogram.getMaxValue() / 1e6;
  }
}
