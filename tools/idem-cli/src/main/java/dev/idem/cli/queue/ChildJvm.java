package dev.idem.cli.queue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM running {@link QueueLabChild} from this process's class path, which the lab kills
 * with {@link Process#destroyForcibly()} (SIGKILL on Unix: no shutdown hook, no finally block, no
 * ack) once it printed the line that says it reached the point of the crash. Not thread-safe.
 */
final class ChildJvm implements AutoCloseable {

  private final Process process;
  private final String role;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private final StringBuffer stderr = new StringBuffer();

  private ChildJvm(Process process, String role) {
    this.process = process;
    this.role = role;
    Thread out = new Thread(() -> pump(process.getInputStream(), true), "queue-lab-child-out");
    Thread err = new Thread(() -> pump(process.getErrorStream(), false), "queue-lab-child-err");
    out.setDaemon(true);
    err.setDaemon(true);
    out.start();
    err.start();
  }

  /**
   * Starts {@code java -cp <this class path> QueueLabChild args...}.
   *
   * @param args the child's arguments; the first is its role
   */
  static ChildJvm start(List<String> args) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(List.of(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m",
        "-cp", System.getProperty("java.class.path"), QueueLabChild.class.getName()));
    command.addAll(args);
    return new ChildJvm(new ProcessBuilder(command).start(), args.get(0));
  }

  private void pump(InputStream in, boolean toLines) {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        if (toLines) {
          lines.add(line);
        } else if (stderr.length() < 4000) {
          stderr.append(line).append('\n');
        }
      }
    } catch (IOException ignored) {
      // the process died: what was read is kept
    }
  }

  /**
   * Waits for a line of the child's standard output that starts with {@code prefix}.
   *
   * @return the line
   * @throws IllegalStateException if the child exits or prints nothing matching within {@code timeout};
   *     the message has the child's standard error
   */
  String await(String prefix, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      String line = lines.poll(100, TimeUnit.MILLISECONDS);
      if (line != null && line.startsWith(prefix)) {
        return line;
      }
      if (line == null && !process.isAlive() && lines.isEmpty()) {
        Thread.sleep(100); // let the error pump finish
        throw new IllegalStateException("the " + role + " process exited with status " + process.exitValue()
            + " before it printed '" + prefix + "': " + stderr.toString().strip());
      }
    }
    throw new IllegalStateException("the " + role + " process did not print '" + prefix + "' within "
        + timeout.toSeconds() + " s: " + stderr.toString().strip());
  }

  /** Kills the child at once (SIGKILL) and waits until it is gone. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the " + role + " process did not die within 30 s of SIGKILL");
    }
  }

  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      kill();
    }
  }
}
