package dev.idem.benchmarks;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * CPU time of processes from Linux's {@code /proc/<pid>/stat}, in clock ticks ({@code getconf
 * CLK_TCK}, normally 100 a second): for HttpLoad's CPU per request. A {@link Source} reads a
 * counter that only grows; a run takes its value at the start and at the end of the measured
 * window. Where {@code /proc} cannot be read, {@link #available()} is false and every source
 * answers -1. Thread-safe (no state but the clock tick rate).
 */
final class ProcCpu {

  private ProcCpu() {}

  /** Clock ticks per second of {@code /proc}'s times: {@code getconf CLK_TCK}, 100 if that fails. */
  static final long TICKS_PER_SECOND = clockTicks();

  /** A CPU counter in clock ticks; -1 if it cannot be read. */
  @FunctionalInterface
  interface Source {
    long ticks();
  }

  /** The fields of one {@code /proc/<pid>/stat} that matter here. */
  record Stat(long pid, String comm, long ppid, long utime, long stime, long cutime, long cstime) {}

  /** @return whether this process can read its own {@code /proc/self/stat} */
  static boolean available() {
    return read(ProcessHandle.current().pid()) != null;
  }

  /** @return one process's user + system time (all its threads), or -1 if it is gone or unreadable */
  static Source process(long pid) {
    return () -> {
      Stat s = read(pid);
      return s == null ? -1 : s.utime() + s.stime();
    };
  }

  /**
   * The MariaDB (or MySQL) server: the user + system time of every process named {@code mariadbd}
   * or {@code mysqld} (normally one, with all its threads).
   */
  static Source mariadb() {
    return named("mariadbd", "mysqld");
  }

  /** The Redis server: the user + system time of every process named {@code redis-server}. */
  static Source redis() {
    return named("redis-server", "redis-server");
  }

  /** @return the user + system time of every process whose name is {@code a} or {@code b}; -1 if none */
  private static Source named(String a, String b) {
    return () -> {
      List<Stat> all = all();
      if (all == null) {
        return -1;
      }
      long sum = 0;
      boolean found = false;
      for (Stat s : all) {
        if (s.comm().equals(a) || s.comm().equals(b)) {
          sum += s.utime() + s.stime();
          found = true;
        }
      }
      return found ? sum : -1;
    };
  }

  /**
   * The PostgreSQL server: the user + system time of every process named {@code postgres}
   * (postmaster, backends, WAL writer, checkpointer, ...), plus the postmaster's cumulative
   * children's time ({@code cutime + cstime}): a backend that exits is reaped by the postmaster, and
   * its CPU moves there; without it a connection closed inside the window would lose its time. The
   * postmaster is a {@code postgres} process whose parent is not one (a cluster each), and the
   * process named by the first line of {@code /var/run/postgresql/*.pid} if it is a {@code
   * postgres} process.
   */
  static Source postgres() {
    return () -> {
      List<Stat> all = all();
      if (all == null) {
        return -1;
      }
      Map<Long, Stat> byPid = new HashMap<>();
      for (Stat s : all) {
        byPid.put(s.pid(), s);
      }
      Set<Long> postmasters = new HashSet<>(pidFiles());
      long sum = 0;
      boolean found = false;
      for (Stat s : all) {
        if (!s.comm().equals("postgres")) {
          continue;
        }
        found = true;
        sum += s.utime() + s.stime();
        Stat parent = byPid.get(s.ppid());
        if (parent == null || !parent.comm().equals("postgres")) {
          postmasters.add(s.pid());
        }
      }
      for (long pid : postmasters) {
        Stat s = byPid.get(pid);
        if (s != null && s.comm().equals("postgres")) {
          sum += s.cutime() + s.cstime();
        }
      }
      return found ? sum : -1;
    };
  }

  /**
   * The PostgreSQL backends connected to one database: the user + system time of the {@code
   * postgres} processes whose title ({@code /proc/<pid>/cmdline}, "postgres: ... user database
   * host ...") names {@code database}. Leaves out the server's shared processes and backends that
   * exited, and so also every other database's clients: a cross-check of {@link #postgres()} on a
   * server that others use too.
   */
  static Source postgresBackends(String database) {
    String word = " " + database + " ";
    return () -> {
      List<Stat> all = all();
      if (all == null) {
        return -1;
      }
      long sum = 0;
      for (Stat s : all) {
        if (s.comm().equals("postgres")) {
          try {
            String title = new String(Files.readAllBytes(Path.of("/proc", Long.toString(s.pid()), "cmdline"))).replace('\0', ' ');
            if (title.contains(word)) {
              sum += s.utime() + s.stime();
            }
          } catch (IOException | SecurityException e) {
            // exited meanwhile
          }
        }
      }
      return sum;
    };
  }

  /** @return the pids in the first lines of {@code /var/run/postgresql/*.pid} (the postmasters), maybe none */
  private static List<Long> pidFiles() {
    List<Long> pids = new ArrayList<>();
    Path dir = Path.of("/var/run/postgresql");
    if (!Files.isDirectory(dir)) {
      return pids;
    }
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*.pid")) {
      for (Path f : files) {
        try {
          List<String> lines = Files.readAllLines(f);
          if (!lines.isEmpty()) {
            pids.add(Long.parseLong(lines.get(0).strip()));
          }
        } catch (IOException | NumberFormatException | SecurityException e) {
          // not readable: the process tree alone decides
        }
      }
    } catch (IOException | SecurityException e) {
      // the same
    }
    return pids;
  }

  /** @return every process's stat line that could be read, or {@code null} if {@code /proc} cannot be listed */
  static List<Stat> all() {
    List<Stat> out = new ArrayList<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().matches("\\d+"))) {
      for (Path d : dirs) {
        Stat s = read(Long.parseLong(d.getFileName().toString()));
        if (s != null) {
          out.add(s);
        }
      }
    } catch (IOException | RuntimeException e) { // DirectoryIteratorException, SecurityException
      return null;
    }
    return out;
  }

  /**
   * @return the process's stat, or {@code null} if it has exited or cannot be read. The name
   *     ({@code comm}) is in parentheses and may hold spaces, so the fields are counted from the last
   *     {@code ')'}: then state, ppid, ..., utime (14th field), stime, cutime, cstime.
   */
  static Stat read(long pid) {
    String line;
    try {
      line = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
    } catch (IOException | SecurityException e) {
      return null;
    }
    return parse(pid, line);
  }

  /** @return the stat of process {@code pid} from its {@code /proc/<pid>/stat} line, or {@code null} if malformed */
  static Stat parse(long pid, String line) {
    int open = line.indexOf('(');
    int close = line.lastIndexOf(')');
    if (open < 0 || close < open) {
      return null;
    }
    String[] f = line.substring(close + 2).trim().split(" +");
    if (f.length < 15) {
      return null;
    }
    try {
      // f[0] is field 3 (state): field n is f[n - 3]
      return new Stat(pid, line.substring(open + 1, close), Long.parseLong(f[1]), Long.parseLong(f[11]), Long.parseLong(f[12]),
          Long.parseLong(f[13]), Long.parseLong(f[14]));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static long clockTicks() {
    try {
      Process p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes()).strip();
      if (p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0) {
        long v = Long.parseLong(out);
        if (v > 0) {
          return v;
        }
      }
    } catch (IOException | NumberFormatException e) {
      // the usual value
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return 100;
  }
}
