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

  /** The line that opens the campaign's section in {@code docs/reliability.md}. */
  public static final String BEGIN = "<!-- fault-campaign:begin (written by dev.idem.campaign.Campaign; do not edit by hand) -->";
  /** The line that closes it. */
  public static final String END = "<!-- fault-campaign:end -->";

  private Report() {}

  /**
   * The invariants: in every mode no duplicate (a marker with two rows), no lost write (a 2xx
   * without a row), no 2xx naming another row, no key answered with two different 2xx answers, and
   * every operation with a final answer that is 2xx (the notes service has no other correct answer
   * to a valid note, so a final 4xx/5xx or an operation left unanswered is a failure too).
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
      if (r.unanswered() != 0 || !r.finalOther().isEmpty()) {
        v.add(run + ": " + r.unanswered() + " operations without a final answer, final non-2xx answers " + r.finalOther());
      }
    }
    return v;
  }

  /**
   * @return the campaign's section: how it was run, a table per store and mode, and the 5xx kinds
   */
  public static String markdown(List<RunResult> results, String arguments, long seed, int concurrency, Duration lease, Duration took) {
    StringBuilder md = new StringBuilder();
    md.append(BEGIN).append("\n");
    md.append("### Last long run\n\n");
    md.append("Run on ").append(LocalDate.now(ZoneOffset.UTC)).append(" with `Campaign ").append(arguments.isBlank() ? "(defaults)" : arguments)
        .append("` (seed ").append(seed).append(", ").append(concurrency).append(" client threads, lease ")
        .append(lease.toMillis()).append(" ms in lease mode), ").append(took.toMinutes()).append(" min in all, on ")
        .append(Runtime.getRuntime().availableProcessors()).append(" cores shared with other work.\n\n");
    md.append("| store | mode | operations | attempts | service kills | database kills | cuts before COMMIT | cuts after COMMIT"
        + " | duplicates | lost writes | 2xx naming another row | keys with two different 2xx | final non-2xx / unanswered | 5xx seen on attempts |\n");
    md.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (RunResult r : results) {
      boolean pg = r.store().equals("postgresql");
      md.append("| ").append(r.store()).append(" | ").append(r.mode()).append(" | ").append(r.operations()).append(" | ").append(r.attempts())
          .append(" | ").append(r.faults("service-kill"))
          .append(" | ").append(pg ? Integer.toString(r.faults("database-kill")) : "n/a")
          .append(" | ").append(pg ? Integer.toString(r.faults("cut-before-commit")) : "n/a")
          .append(" | ").append(pg ? Integer.toString(r.faults("cut-after-commit")) : "n/a")
          .append(" | ").append(r.duplicates()).append(" | ").append(r.lostWrites()).append(" | ").append(r.answersNamingAnotherRow())
          .append(" | ").append(r.twoDifferent2xx())
          .append(" | ").append(r.finalOther().values().stream().mapToInt(Integer::intValue).sum()).append(" / ").append(r.unanswered())
          .append(" | ").append(r.fiveXxTotal()).append(" |\n");
    }
    md.append("\n5xx answers seen on attempts, by status and problem type (every one was retried by the client with the same key):\n\n");
    for (RunResult r : results) {
      md.append("- ").append(r.store()).append("/").append(r.mode()).append(": ")
          .append(r.fiveXx().isEmpty() ? "none" : format(r.fiveXx()))
          .append("; attempts without an answer: ").append(r.ioFailures().isEmpty() ? "none" : format(r.ioFailures())).append("\n");
    }
    List<String> violations = violations(results);
    md.append("\nInvariants (0 duplicates, 0 lost writes, 0 keys with two different 2xx answers, every operation answered 2xx): ")
        .append(violations.isEmpty() ? "**all held**." : "**violated**: " + String.join("; ", violations) + ".").append("\n");
    md.append(END).append("\n");
    return md.toString();
  }

  private static String format(Map<String, Integer> m) {
    return m.entrySet().stream().map(e -> "`" + e.getKey().strip() + "` " + e.getValue()).collect(Collectors.joining(", "));
  }

  /**
   * Replaces the campaign's section of a Markdown file (between {@link #BEGIN} and {@link #END}),
   * or appends it when there is none; the rest of the file is kept as it is.
   *
   * @param file the file, created if missing
   * @param section the section, markers included
   * @throws IOException if it cannot be read or written
   */
  public static void replaceSection(Path file, String section) throws IOException {
    String text = Files.isRegularFile(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
    int b = text.indexOf(BEGIN);
    int e = text.indexOf(END);
    String updated;
    if (b >= 0 && e > b) {
      int after = e + END.length();
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
