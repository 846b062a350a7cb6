package dev.idem.benchmarks;

import com.sun.management.OperatingSystemMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** What the report says about the machine: read from the JVM and, on Linux, from /proc. */
final class Machine {

  private Machine() {}

  static Map<String, String> describe() {
    Map<String, String> m = new LinkedHashMap<>();
    String model = procField("/proc/cpuinfo", "model name");
    m.put("cores", Runtime.getRuntime().availableProcessors() + (model == null ? "" : " (" + model + ")"));
    String mem = procField("/proc/meminfo", "MemTotal");
    if (mem != null) {
      long kib = Long.parseLong(mem.replaceAll("[^0-9]", ""));
      m.put("memory", String.format(Locale.ROOT, "%.1f GiB", kib / 1024.0 / 1024.0));
    } else if (ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean) {
      long bytes = ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getTotalMemorySize();
      m.put("memory", String.format(Locale.ROOT, "%.1f GiB", bytes / 1024.0 / 1024.0 / 1024.0));
    }
    m.put("OS", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
    m.put("JDK", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version")
        + " (" + System.getProperty("java.vendor") + ")");
    m.put("JVM heap max", Runtime.getRuntime().maxMemory() / (1024 * 1024) + " MiB");
    return m;
  }

  /** @return the 1-minute load average, or -1 where the platform has none */
  static double loadAverage() {
    return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
  }

  private static String procField(String file, String field) {
    try {
      List<String> lines = Files.readAllLines(Path.of(file));
      for (String line : lines) {
        int colon = line.indexOf(':');
        if (colon > 0 && line.substring(0, colon).strip().equals(field)) {
          return line.substring(colon + 1).strip();
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux: the JVM's view is all there is
    }
    return null;
  }
}
