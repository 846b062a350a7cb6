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
 * A child JVM running a lab's child class ({@link QueueLabChild}, the steps lab's child) from this
 * process's class path, which the lab kills with {@link Process#destroyForcibly()} (SIGKILL on Unix:
 * no shutdown hook, no finally block, no ack) once it printed the line that says it reached the
 * point of the crash. Its standard input stays open while the lab runs, so a child that watches it
 * exits by itself when the lab goes away. Not thread-safe.
 */
public final class ChildJvm implements AutoCloseable {

  private final Process process;
  private final String role;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private final StringBuffer stderr = new StringBuffer();

  private ChildJvm(Process process, String role) {
    this.process = process;
    this.role = role;
    Thread out = new Thread(() -> pump(process.getInputStream(), true), "lab-child-out");
    Thread err = new Thread(() -> pump(process.getErrorStream(), false), "lab-child-err");
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
    return start(QueueLabChild.class.getName(), args);
  }

  /**
   * Starts {@code java -cp <this class path> mainClass args...}: a small client JVM (C1 only,
   * serial GC, 128 MiB heap).
   *
   * @param mainClass the fully qualified name of a class with a {@code main} method on this class path
   * @param args the child's arguments, at least one; the first names its role in error messages
   * @return the running child
   * @throws IOException if the process cannot be started
   */
  public static ChildJvm start(String mainClass, List<String> args) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(List.of(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m",
        "-cp", System.getProperty("java.class.path"), mainClass));
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
  public String await(String prefix, Duration timeout) throws InterruptedException {
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
  public void kill() throws InterruptedException {
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

  // ---- for the child's side ----

  /**
   * In a child: exits the JVM at once (status 5) when standard input closes, that is when the lab
   * that started it is gone, so an interrupted lab leaves no process behind. Starts a daemon thread.
   */
  public static void exitWhenParentGoes() {
    Thread t = new Thread(() -> {
      try {
        while (System.in.read() >= 0) {
          // the parent writes nothing; EOF means it is gone
        }
      } catch (IOException ignored) {
        // same
      }
      Runtime.getRuntime().halt(5);
    }, "parent-watch");
    t.setDaemon(true);
    t.start();
  }

  /**
   * In a child: prints the line the lab {@linkplain #await waits for}, then waits to be killed; if
   * no SIGKILL comes within two minutes, halts with status 4.
   *
   * @param line the line, which starts with the prefix the lab awaits
   * @throws InterruptedException if the waiting thread is interrupted
   */
  public static void announceAndAwaitKill(String line) throws InterruptedException {
    System.out.println(line);
    System.out.flush();
    Thread.sleep(Duration.ofMinutes(2).toMillis());
    System.err.println("not killed within two minutes");
    Runtime.getRuntime().halt(4);
  }
}
