package dev.idem.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * What the benchmark commands that run the notes service share: reading the command line (picocli),
 * checking the options and the service jar, and the first line of their report. Stateless.
 */
final class BenchmarkCommand {

  /** Checks the parsed options; throws {@link ParameterException} naming what is wrong. */
  @FunctionalInterface
  interface Check {
    void check(CommandLine cl);
  }

  private BenchmarkCommand() {}

  /**
   * Parses {@code argv} into {@code options}, checks them and the notes service jar. Bad options or
   * a missing jar print why (and the usage) on standard error and exit with status 2.
   *
   * @param tool the command's name, for the messages
   * @param options the picocli-annotated options object, filled in
   * @param argv the command line
   * @param check what else the options must satisfy
   * @param jar where the notes service jar is, read after the options are parsed
   * @return {@code false} when {@code --help} was asked (the usage is printed): the command stops
   */
  static boolean parse(String tool, Object options, String[] argv, Check check, java.util.function.Supplier<Path> jar) {
    CommandLine cl = new CommandLine(options);
    try {
      cl.parseArgs(argv);
      check.check(cl);
    } catch (ParameterException e) {
      System.err.println(tool + ": " + e.getMessage());
      cl.usage(System.err);
      System.exit(2);
    }
    if (cl.isUsageHelpRequested()) {
      cl.usage(System.out);
      return false;
    }
    if (!Files.isRegularFile(jar.get())) {
      System.err.println(tool + ": the notes service jar is missing: " + jar.get() + " (build with ./mvnw -B -q -DskipTests package)");
      System.exit(2);
    }
    return true;
  }

  /**
   * @param tool the command's class name in {@code dev.idem.benchmarks}
   * @param argv the command line it ran with
   * @param started when it started
   * @return the report's first paragraph: the command, when and how long, the machine and its load
   *     average now, ending with a blank line
   */
  static String writtenBy(String tool, List<String> argv, Instant started) {
    StringBuilder r = new StringBuilder("Written by `java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.");
    r.append(tool);
    argv.forEach(s -> r.append(' ').append(s));
    r.append("` (see the class's Javadoc for the method) on ").append(started.truncatedTo(ChronoUnit.SECONDS)).append(", in ")
        .append(Duration.between(started, Instant.now()).toMinutes()).append(" min. Machine: ");
    Machine.describe().forEach((k, v) -> r.append(k).append(' ').append(v).append("; "));
    r.append(String.format(Locale.ROOT, "load average at the end %.1f.%n%n", Machine.loadAverage()));
    return r.toString();
  }
}
