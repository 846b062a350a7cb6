package dev.idem.testclusters;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/** What the server-process classes of this package share: free ports, executables, files, waiting. Not public API. */
final class ProcessSupport {

  private static final Random RANDOM = new Random();
  /** Ports handed out by this JVM, so that two clusters started at once never pick the same. */
  private static final Set<Integer> HANDED_OUT = java.util.concurrent.ConcurrentHashMap.newKeySet();

  private ProcessSupport() {}

  /** @return {@code count} distinct ports free on loopback, from 20000 to 39999 */
  static List<Integer> freePorts(int count) {
    List<Integer> ports = new ArrayList<>();
    for (int tries = 0; ports.size() < count && tries < 10_000; tries++) {
      int port = 20_000 + RANDOM.nextInt(20_000);
      if (!ports.contains(port) && free(port) && HANDED_OUT.add(port)) {
        ports.add(port);
      }
    }
    if (ports.size() < count) {
      throw new IllegalStateException("no " + count + " free loopback ports found");
    }
    return ports;
  }

  static boolean free(int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(false);
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * @param env an environment variable that names the executable, checked first
   * @param name the executable's name, looked up on the {@code PATH} and then in {@code fallbacks}
   * @return the executable's path, or {@code null}
   */
  static @Nullable String executable(@Nullable String env, String name, String... fallbacks) {
    if (env != null) {
      String configured = System.getenv(env);
      if (configured != null && !configured.isBlank()) {
        return new File(configured).canExecute() ? configured : null;
      }
    }
    String path = System.getenv("PATH");
    if (path != null) {
      for (String d : path.split(File.pathSeparator)) {
        File f = new File(d, name);
        if (f.canExecute()) {
          return f.getAbsolutePath();
        }
      }
    }
    for (String fallback : fallbacks) {
      File f = new File(fallback);
      if (f.canExecute()) {
        return f.getAbsolutePath();
      }
    }
    return null;
  }

  /** @return whether this JVM runs as root (servers that refuse root then run as their own user) */
  static boolean root() {
    return "root".equals(System.getProperty("user.name"));
  }

  /** @return whether the operating system has this user */
  static boolean userExists(String user) {
    try {
      return run(List.of("id", "-u", user), 10).trim().matches("[0-9]+");
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** Makes {@code user} the owner of {@code dir} and everything in it. */
  static void chown(Path dir, String user) {
    try (Stream<Path> files = Files.walk(dir)) {
      UserPrincipalLookupService lookup = dir.getFileSystem().getUserPrincipalLookupService();
      UserPrincipal owner = lookup.lookupPrincipalByName(user);
      GroupPrincipal group = lookup.lookupPrincipalByGroupName(user);
      for (Path p : (Iterable<Path>) files::iterator) {
        PosixFileAttributeView view = Files.getFileAttributeView(p, PosixFileAttributeView.class);
        view.setOwner(owner);
        view.setGroup(group);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot give " + dir + " to " + user, e);
    }
  }

  /** Deletes a directory tree; what cannot be deleted is left. */
  static void deleteTree(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    } catch (IOException | UncheckedIOException ignored) {
      // a temporary directory left behind is harmless
    }
  }

  /**
   * Runs a command to its end.
   *
   * @return its standard output and error, together
   * @throws IllegalStateException if it runs longer than {@code timeoutSeconds}
   */
  static String run(List<String> command, int timeoutSeconds) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      p.getOutputStream().close();
      StringBuilder out = new StringBuilder();
      Thread reader = new Thread(() -> {
        try {
          out.append(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException ignored) {
          // the process went away
        }
      });
      reader.setDaemon(true);
      reader.start();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("timed out after " + timeoutSeconds + " s: " + String.join(" ", command));
      }
      reader.join(5000);
      synchronized (out) {
        return out.toString();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Runs a command and fails with its output when it exits with another status than 0. */
  static String runOrFail(List<String> command, int timeoutSeconds) {
    return runOrFail(command, timeoutSeconds, null);
  }

  /** {@link #runOrFail(List, int)} in directory {@code cwd} ({@code null}: this JVM's). */
  static String runOrFail(List<String> command, int timeoutSeconds, @Nullable Path cwd) {
    try {
      ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
      if (cwd != null) {
        builder.directory(cwd.toFile());
      }
      Process p = builder.start();
      p.getOutputStream().close();
      byte[][] out = new byte[1][];
      Thread reader = new Thread(() -> {
        try {
          out[0] = p.getInputStream().readAllBytes();
        } catch (IOException ignored) {
          out[0] = new byte[0];
        }
      });
      reader.setDaemon(true);
      reader.start();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("timed out after " + timeoutSeconds + " s: " + String.join(" ", command));
      }
      reader.join(5000);
      String text = out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        throw new IllegalStateException("exit status " + p.exitValue() + ": " + String.join(" ", command) + "\n" + text);
      }
      return text;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** @return the last {@code lines} lines of a log file, or a note that it cannot be read */
  static String tail(Path file, int lines) {
    try {
      List<String> all = Files.readAllLines(file, StandardCharsets.UTF_8);
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException | UncheckedIOException e) {
      return "(" + file + " cannot be read: " + e.getMessage() + ")";
    }
  }

  /** Kills one process with SIGKILL and waits for it to end. */
  static void killHard(Process p) {
    p.destroyForcibly();
    try {
      p.waitFor(20, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops one process with SIGTERM, then SIGKILL after {@code seconds}. */
  static void stop(Process p, int seconds) {
    if (!p.isAlive()) {
      return;
    }
    p.destroy();
    try {
      if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
