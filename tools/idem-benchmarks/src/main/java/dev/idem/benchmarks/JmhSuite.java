package dev.idem.benchmarks;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs the JMH benchmarks of {@code dev.idem.benchmarks.jmh} through JMH's own runner, in forked
 * JVMs (the class path of this one: run the harness from {@code benchmarks.jar}).
 */
final class JmhSuite {

  static final String INCLUDE = "dev\\.idem\\.benchmarks\\.jmh\\..*";

  private JmhSuite() {}

  static List<Results.Jmh> run(Options o) throws RunnerException {
    Runner runner = new Runner(new OptionsBuilder()
        .include(INCLUDE)
        .forks(o.jmhForks)
        .warmupIterations(o.jmhWarmupIterations)
        .warmupTime(TimeValue.milliseconds(o.jmhWarmupTime.toMillis()))
        .measurementIterations(o.jmhIterations)
        .measurementTime(TimeValue.milliseconds(o.jmhIterationTime.toMillis()))
        .jvmArgsAppend("-Xms1g", "-Xmx1g")
        .shouldFailOnError(true)
        .build());
    Collection<RunResult> runs = runner.run();
    List<Results.Jmh> rows = new ArrayList<>();
    for (RunResult run : runs) {
      BenchmarkParams params = run.getParams();
      Result<?> primary = run.getPrimaryResult();
      Map<String, String> values = new TreeMap<>();
      for (String key : params.getParamsKeys()) {
        values.put(key, params.getParam(key));
      }
      String benchmark = params.getBenchmark();
      benchmark = benchmark.substring(benchmark.lastIndexOf('.', benchmark.lastIndexOf('.') - 1) + 1);
      boolean sample = params.getMode() == Mode.SampleTime;
      double p50 = sample ? primary.getStatistics().getPercentile(50) : Double.NaN;
      double p99 = sample ? primary.getStatistics().getPercentile(99) : Double.NaN;
      rows.add(new Results.Jmh(benchmark, values.isEmpty() ? "" : values.toString().replaceAll("[{}]", ""),
          params.getMode().shortLabel(), primary.getSampleCount(), primary.getScore(), primary.getScoreError(),
          primary.getScoreUnit(), p50, p99));
    }
    return rows;
  }
}
