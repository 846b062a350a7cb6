package dev.idem.campaign;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** The campaign's results as Markdown, and the invariants they must satisfy. */
public final class Report {

  /**
   * The line that opens the campaign's section in {@code docs/reports/reliability.md} for the default
   * stores and modes (SQLite and PostgreSQL, transactional and lease mode).
   */
  public static final String BEGIN = "<!-- fault-campaign:begin (written by dev.idem.campaign.Campaign; do not edit by hand) -->";
  /** The line that closes it. */
  public static final String END = "<!-- fault-campaign:end -->";
  /** The stores and modes of {@link #BEGIN}'s section. */
  static final List<String> DEFAULT_RUNS = List.of("postgresql/lease", "postgresql/transactional", "sqlite/lease", "sqlite/transactional");

  private Report() {}

  /**
   * The invariants: in every mode no duplicate (a marker with two rows), no lost write (a 2xx
   * without a row), no 2xx naming another row, no key answered with two different 2xx answers, and
   * every operation with a final answer that is 2xx (the notes service has no other correct answer
   * to a valid note, so a final 4xx/5xx or an operation left unanswered is a failure too), no
   * cross-scope replay, and no 5xx answer to a fuzzed request (no fault is injected while they run).
   *
   * @param results the runs
   * @return one line per violation; empty when all held
   */
  public static List<String> violations(List<RunResult> results) {
    List<String> v = new ArrayList<>();
    for (RunResult r : results) {
      String run = r.store() + "/" + r.mode();
      if (r.duplicates() != 0) {
        v.add(run + ": " + r.duplicates() + " duplicates");
      }
      if (r.lostWrites() != 0) {
        v.add(run + ": " + r.lostWrites() + " lost writes");
      }
      if (r.answersNamingAnotherRow() != 0) {
        v.add(run + ": " + r.answersNamingAnotherRow() + " 2xx answers naming another row");
      }
      if (r.twoDifferent2xx() != 0) {
        v.add(run + ": " + r.twoDifferent2xx() + " keys answered with two different 2xx answers");
      }
      if (r.crossScopeReplays() != 0) {
        v.add(run + ": " + r.crossScopeReplays() + " cross-scope replays");
      }
      if (r.fuzzFiveXxTotal() != 0) {
        v.add(run + ": " + r.fuzzFiveXxTotal() + " 5xx answers to fuzzed requests " + r.fuzzFiveXx());
      }
      if (r.unanswered() != 0 || !r.finalOther().isEmpty()) {
        v.add(run + ": " + r.unanswered() + " operations without a final answer, final non-2xx answers " + r.finalOther());
      }
    }
    return v;
  }

  /**
   * The runs that stores and modes make: every store with every mode, except Redis, which runs in
   * lease mode only.
   *
   * @return {@code store/mode} names, sorted
   */
  static List<String> runs(List<String> stores, List<String> modes) {
    return stores.stream().flatMap(s -> modes.stream().filter(m -> !s.equals("redis") || m.equals("lease")).map(m -> s + "/" + m))
        .distinct().sorted().toList();
  }

  /** @return the opening line of the section of these runs */
  static String begin(List<String> runs) {
    return runs.equals(DEFAULT_RUNS) ? BEGIN
        : "<!-- fault-campaign:begin " + String.join(",", runs) + " (written by dev.idem.campaign.Campaign; do not edit by hand) -->";
  }

  /** @return the closing line of the section of these runs */
  static String end(List<String> runs) {
    return runs.equals(DEFAULT_RUNS) ? END : "<!-- fault-campaign:end " + String.join(",", runs) + " -->";
  }

  /**
   * @param stores the stores of the run, as given
   * @param modes the modes of the run, as given
   * @return the campaign's section for these stores and modes (its markers name them unless they
   *     are the default ones, so that runs of other stores and modes have sections of their own):
   *     how it was run, a table per store and mode, and the 5xx kinds
   */
  public static String markdown(List<RunResult> results, List<String> stores, List<String> modes, String arguments, long seed, int concurrency,
      Duration lease, Duration took) {
    List<String> runs = runs(stores, modes);
    StringBuilder md = new StringBuilder();
    md.append(begin(runs)).append("\n");
    md.append(runs.equals(DEFAULT_RUNS) ? "### Last long run\n\n" : "### Last long run of " + String.join(", ", runs) + "\n\n");
    md.append("Run on ").append(LocalDate.now(ZoneOffset.UTC)).append(" with `Campaign ").append(arguments.isBlank() ? "(defaults)" : arguments)
        .append("` (seed ").append(seed).append(", ").append(concurrency).append(" client threads, lease ")
        .append(lease.toMillis()).append(" ms in lease mode), ").append(took.toMinutes()).append(" min in all, on ")
        .append(Runtime.getRuntime().availableProcessors()).append(" cores shared with other work.\n\n");
    md.append("| store | mode | operations | attempts | service kills | database kills | cuts before COMMIT | cuts after COMMIT | Redis kills"
        + " | duplicates | lost writes | 2xx naming another row | keys with two different 2xx | final non-2xx / unanswered | 5xx seen on attempts"
        + " | cross-scope replays | fuzz requests | fuzz 5xx |\n");
    md.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (RunResult r : results) {
      boolean pg = r.store().equals("postgresql");
      boolean redis = r.store().equals("redis");
      boolean cuts = pg && r.mode().equals("transactional"); // lease mode sends no COMMIT to cut
      md.append("| ").append(r.store()).append(" | ").append(r.mode()).append(" | ").append(r.operations()).append(" | ").append(r.attempts())
          .append(" | ").append(r.faults("service-kill"))
          .append(" | ").append(pg ? Integer.toString(r.faults("database-kill")) : "n/a")
          .append(" | ").append(cuts ? Integer.toString(r.faults("cut-before-commit")) : "n/a")
          .append(" | ").append(cuts ? Integer.toString(r.faults("cut-after-commit")) : "n/a")
          .append(" | ").append(redis ? Integer.toString(r.faults("redis-kill")) : "n/a")
          .append(" | ").append(r.duplicates()).append(" | ").append(r.lostWrites()).append(" | ").append(r.answersNamingAnotherRow())
          .append(" | ").append(r.twoDifferent2xx())
          .append(" | ").append(r.finalOther().values().stream().mapToInt(Integer::intValue).sum()).append(" / ").append(r.unanswered())
          .append(" | ").append(r.fiveXxTotal())
          .append(" | ").append(r.crossScopeReplays()).append(" | ").append(r.fuzzRequests()).append(" | ").append(r.fuzzFiveXxTotal()).append(" |\n");
    }
    md.append("\n5xx answers seen on attempts, by status and problem type (every one was retried by the client with the same key):\n\n");
    for (RunResult r : results) {
      md.append("- ").append(r.store()).append("/").append(r.mode()).append(": ")
          .append(r.fiveXx().isEmpty() ? "none" : format(r.fiveXx()))
          .append("; attempts without an answer: ").append(r.ioFailures().isEmpty() ? "none" : format(r.ioFailures())).append("\n");
    }
    md.append("\nFuzzed requests (no fault injected while they ran), answers by status; 5xx by fuzz kind:\n\n");
    for (RunResult r : results) {
      md.append("- ").append(r.store()).append("/").append(r.mode()).append(": ")
          .append(r.fuzzStatuses().entrySet().stream().map(e -> (e.getKey() == 0 ? "no answer" : "`" + e.getKey() + "`") + " " + e.getValue())
              .collect(Collectors.joining(", ")))
          .append("; 5xx: ").append(r.fuzzFiveXx().isEmpty() ? "none" : format(r.fuzzFiveXx())).append("\n");
    }
    List<String> violations = violations(results);
    md.append("\nInvariants (0 duplicates, 0 lost writes, 0 keys with two different 2xx answers, every operation answered 2xx,"
        + " 0 cross-scope replays, 0 × 5xx from fuzzed requests): ")
        .append(violations.isEmpty() ? "**all held**." : "**violated**: " + String.join("; ", violations) + ".").append("\n");
    md.append(end(runs)).append("\n");
    return md.toString();
  }

  private static String format(Map<String, Integer> m) {
    return m.entrySet().stream().map(e -> "`" + e.getKey().strip() + "` " + e.getValue()).collect(Collectors.joining(", "));
  }

  /**
   * Replaces the campaign's section of a Markdown file that has the same markers as {@code section}
   * (its first and last lines: for the default stores and modes {@link #BEGIN} and {@link #END}),
   * or appends it when there is none; the rest of the file, sections of other stores and modes
   * included, is kept as it is.
   *
   * @param file the file, created if missing
   * @param section the section, markers included (as {@link #markdown} makes it)
   * @throws IOException if it cannot be read or written
   */
  public static void replaceSection(Path file, String section) throws IOException {
    String text = Files.isRegularFile(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
    String[] lines = section.strip().split("\n");
    String begin = lines[0];
    String end = lines[lines.length - 1];
    int b = text.indexOf(begin);
    int e = b < 0 ? -1 : text.indexOf(end, b);
    String updated;
    if (b >= 0 && e > b) {
      int after = e + end.length();
      if (after < text.length() && text.charAt(after) == '\n') {
        after++;
      }
      updated = text.substring(0, b) + section + text.substring(after);
    } else {
      updated = text + (text.isEmpty() || text.endsWith("\n\n") ? "" : text.endsWith("\n") ? "\n" : "\n\n") + section;
    }
    Files.writeString(file, updated, StandardCharsets.UTF_8);
  }
}
