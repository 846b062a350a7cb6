package dev.idem.benchmarks.jmh;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.util.List;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * A JMH profiler that reports the CPU time the benchmark JVM used per operation ({@code
 * cpu.time.norm}, in ns/op): on a machine shared with other work, wall-clock time per operation
 * includes the time the benchmark thread waited for a core, CPU time does not. It is the process's
 * CPU time over the iteration (benchmark threads, and the JIT compiler and garbage collector
 * threads working for them) divided by the operations of the iteration, so use it with one
 * benchmark thread. Run with {@code -prof dev.idem.benchmarks.jmh.CpuTimeProfiler}.
 *
 * <p>Needs the {@code com.sun.management} extension of the platform MXBean, which HotSpot JVMs
 * have; JMH creates one instance per forked JVM.
 */
public final class CpuTimeProfiler implements InternalProfiler {

  private final OperatingSystemMXBean os =
      (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
  private long start;

  @Override
  public String getDescription() {
    return "process CPU time per operation";
  }

  @Override
  public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
    start = os.getProcessCpuTime();
  }

  @Override
  public List<? extends Result> afterIteration(
      BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
    long cpu = os.getProcessCpuTime() - start;
    long ops = result.getMetadata().getAllOps();
    double perOp = ops == 0 ? Double.NaN : (double) cpu / ops;
    return List.of(new ScalarResult("cpu.time.norm", perOp, "ns/op", AggregationPolicy.AVG));
  }
}
