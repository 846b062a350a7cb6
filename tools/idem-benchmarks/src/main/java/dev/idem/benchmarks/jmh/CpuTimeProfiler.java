package dev.idem.benchmarks.jmh;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * A JMH profiler that reports CPU time per operation, in ns/op: on a machine shared with other
 * work, wall-clock time per operation includes the time a benchmark thread waited for a core, CPU
 * time does not. Two figures per iteration, divided by the operations of the iteration:
 *
 * <ul>
 *   <li>{@code cpu.time.norm}: the CPU time of JMH's worker threads (those running the benchmark
 *       method);
 *   <li>{@code cpu.process.norm}: the CPU time of the whole benchmark JVM, which adds the JIT
 *       compiler and the garbage collector working for them.
 * </ul>
 *
 * Run with {@code -prof dev.idem.benchmarks.jmh.CpuTimeProfiler}. Needs thread CPU time
 * measurement and the {@code com.sun.management} extension of the platform MXBeans, which HotSpot
 * JVMs have; JMH creates one instance per forked JVM.
 */
public final class CpuTimeProfiler implements InternalProfiler {

  private final OperatingSystemMXBean os =
      (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
  private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
  private Map<Long, Long> workersAtStart = Map.of();
  private long processAtStart;

  @Override
  public String getDescription() {
    return "CPU time per operation: benchmark threads, and the whole JVM";
  }

  @Override
  public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
    workersAtStart = workerCpu();
    processAtStart = os.getProcessCpuTime();
  }

  @Override
  public List<? extends Result> afterIteration(
      BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
    long process = os.getProcessCpuTime() - processAtStart;
    long workers = 0;
    for (Map.Entry<Long, Long> e : workerCpu().entrySet()) {
      workers += e.getValue() - workersAtStart.getOrDefault(e.getKey(), 0L);
    }
    long ops = result.getMetadata().getAllOps();
    return List.of(
        new ScalarResult("cpu.time.norm", perOp(workers, ops), "ns/op", AggregationPolicy.AVG),
        new ScalarResult("cpu.process.norm", perOp(process, ops), "ns/op", AggregationPolicy.AVG));
  }

  private static double perOp(long nanos, long ops) {
    return ops == 0 ? Double.NaN : (double) nanos / ops;
  }

  /** CPU time so far of each live JMH worker thread, by thread id. */
  private Map<Long, Long> workerCpu() {
    Map<Long, Long> cpu = new HashMap<>();
    for (ThreadInfo info : threads.getThreadInfo(threads.getAllThreadIds())) {
      if (info != null && info.getThreadName().contains("jmh-worker")) {
        long t = threads.getThreadCpuTime(info.getThreadId());
        if (t >= 0) {
          cpu.put(info.getThreadId(), t);
        }
      }
    }
    return cpu;
  }
}
