package dev.idem.check;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.stream.Collectors;
import javax.xml.stream.XMLOutputFactory;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamWriter;

/**
 * What one {@link IdemCheck#run()} found: a {@link CheckResult} per {@link CheckName}, how effects
 * were counted, and how many requests were sent. Renders itself as a table, as JSON and as JUnit
 * XML. Immutable and thread-safe.
 */
public final class CheckReport {

  private final String target;
  private final boolean countingIsReal;
  private final String counting;
  private final List<CheckResult> results;
  private final int sends;
  private final int countQueries;
  private final int bound;
  private final int concurrency;
  private final Duration duration;

  CheckReport(String target, boolean countingIsReal, String counting, List<CheckResult> results, int sends,
      int countQueries, int bound, int concurrency, Duration duration) {
    this.target = target;
    this.countingIsReal = countingIsReal;
    this.counting = counting;
    this.results = List.copyOf(results);
    this.sends = sends;
    this.countQueries = countQueries;
    this.bound = bound;
    this.concurrency = concurrency;
    this.duration = duration;
  }

  /** @return the method and URL checked, for example {@code POST http://127.0.0.1:8080/notes} */
  public String target() {
    return target;
  }

  /** @return how effects were counted, in words; never {@code null} */
  public String counting() {
    return counting;
  }

  /** @return whether effects were counted in the API's state ({@code false}: from its answers) */
  public boolean countingIsReal() {
    return countingIsReal;
  }

  /** @return one result per check, in the order of {@link CheckName}; immutable */
  public List<CheckResult> results() {
    return results;
  }

  /**
   * @param name a check
   * @return its result
   * @throws java.util.NoSuchElementException never for a report from {@link IdemCheck#run()}
   */
  public CheckResult result(CheckName name) {
    Objects.requireNonNull(name, "name");
    return results.stream().filter(r -> r.name() == name).findFirst().orElseThrow();
  }

  /** @return the checks whose verdict is {@link Verdict#FAIL}, in order; immutable */
  public List<CheckResult> failures() {
    return results.stream().filter(r -> r.verdict().failsRun()).toList();
  }

  /** @return whether every required check passed (possibly with a deviation, or skipped as not applicable) */
  public boolean passed() {
    return failures().isEmpty();
  }

  /** @return the command line's exit status: 0 when {@link #passed()}, else 1 */
  public int exitStatus() {
    return passed() ? 0 : 1;
  }

  /** @return requests sent to the API's create endpoint */
  public int requestsSent() {
    return sends;
  }

  /** @return count queries made (GETs of a count URL, SQL queries or calls of a count function) */
  public int countQueries() {
    return countQueries;
  }

  /** @return the most requests and count queries the run was allowed */
  public int requestBound() {
    return bound;
  }

  /** @return how long the run took */
  public Duration duration() {
    return duration;
  }

  /** @return the report as a table with one row per check, the details, the counting and the bound */
  public String toTable() {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"check", "required", "verdict", "sends", "answers", "effects"});
    for (CheckResult r : results) {
      rows.add(new String[] {
        r.name().id(),
        r.name().required() ? "yes" : "no",
        r.verdict().label(),
        r.sends() == 0 ? "-" : String.valueOf(r.sends()),
        r.answers().isEmpty() ? "-" : abbreviate(r.answers(), 44),
        r.effects().isPresent() ? String.valueOf(r.effects().getAsLong()) : "-"
      });
    }
    StringBuilder sb = new StringBuilder();
    sb.append("target: ").append(target).append('\n');
    sb.append("effects counted ").append(counting).append("\n\n");
    sb.append(format(rows)).append('\n');
    for (CheckResult r : results) {
      sb.append(r.name().id()).append(": ").append(r.detail()).append('\n');
    }
    sb.append('\n');
    sb.append("requests: ").append(sends).append(" to the API");
    if (countingIsReal) {
      sb.append(" and ").append(countQueries).append(" count queries");
    }
    sb.append(" (bound: ").append(bound).append(" = ").append(concurrency).append(" concurrent + ")
        .append(Checks.SENDS_BESIDES_CONCURRENT).append(" other requests")
        .append(countingIsReal ? " + " + Checks.COUNT_QUERIES + " count queries" : "").append(")\n");
    CheckResult control = result(CheckName.CONTROL);
    if (control.verdict() == Verdict.FAIL && control.detail().startsWith("BLIND")) {
      sb.append("the counting is BLIND (see control): effect counts above prove nothing\n");
    }
    sb.append(passed() ? "result: every required check passed"
        : "result: FAILED: " + failures().stream().map(r -> r.name().id()).collect(Collectors.joining(", ")));
    sb.append('\n');
    return sb.toString();
  }

  /** @return the report as a JSON object (indented), ending with a line break */
  public String toJson() {
    ObjectNode root = Json.MAPPER.createObjectNode();
    root.put("target", target);
    ObjectNode c = root.putObject("counting");
    c.put("real", countingIsReal);
    c.put("description", counting);
    root.put("passed", passed());
    root.put("exitStatus", exitStatus());
    ObjectNode requests = root.putObject("requests");
    requests.put("sent", sends);
    requests.put("countQueries", countQueries);
    requests.put("bound", bound);
    ArrayNode checks = root.putArray("checks");
    for (CheckResult r : results) {
      ObjectNode o = checks.addObject();
      o.put("check", r.name().id());
      o.put("required", r.name().required());
      o.put("verdict", r.verdict().name().toLowerCase(Locale.ROOT));
      o.put("sends", r.sends());
      o.put("answers", r.answers());
      if (r.effects().isPresent()) {
        o.put("effects", r.effects().getAsLong());
      } else {
        o.putNull("effects");
      }
      o.put("detail", r.detail());
      o.put("expectation", r.name().expectation());
      o.put("seconds", r.duration().toMillis() / 1000.0);
    }
    try {
      return Json.MAPPER.writer().with(SerializationFeature.INDENT_OUTPUT).writeValueAsString(root) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON", e);
    }
  }

  /**
   * @return the report as a JUnit XML {@code testsuite}, as CI systems read it: one {@code
   *     testcase} per check, {@code failure} for {@link Verdict#FAIL}, {@code skipped} for {@link
   *     Verdict#SKIPPED}, the detail in {@code system-out}
   */
  public String toJUnitXml() {
    StringWriter out = new StringWriter();
    try {
      XMLStreamWriter x = XMLOutputFactory.newFactory().createXMLStreamWriter(out);
      x.writeStartDocument("UTF-8", "1.0");
      x.writeCharacters("\n");
      x.writeStartElement("testsuite");
      x.writeAttribute("name", "idem check " + target);
      x.writeAttribute("tests", String.valueOf(results.size()));
      x.writeAttribute("failures", String.valueOf(failures().size()));
      x.writeAttribute("errors", "0");
      x.writeAttribute("skipped", String.valueOf(results.stream().filter(r -> r.verdict() == Verdict.SKIPPED).count()));
      x.writeAttribute("time", seconds(duration));
      x.writeCharacters("\n  ");
      x.writeStartElement("properties");
      property(x, "target", target);
      property(x, "counting", counting);
      property(x, "requests", sends + " sent, " + countQueries + " count queries, bound " + bound);
      x.writeCharacters("\n  ");
      x.writeEndElement();
      for (CheckResult r : results) {
        x.writeCharacters("\n  ");
        x.writeStartElement("testcase");
        x.writeAttribute("classname", "idem.check");
        x.writeAttribute("name", r.name().id());
        x.writeAttribute("time", seconds(r.duration()));
        if (r.verdict() == Verdict.FAIL) {
          x.writeCharacters("\n    ");
          x.writeStartElement("failure");
          x.writeAttribute("message", r.detail());
          x.writeAttribute("type", "idem.check." + r.name().id());
          x.writeCharacters("expected: " + r.name().expectation() + "\nanswers: " + r.answers());
          x.writeEndElement();
        } else if (r.verdict() == Verdict.SKIPPED) {
          x.writeCharacters("\n    ");
          x.writeStartElement("skipped");
          x.writeAttribute("message", r.detail());
          x.writeEndElement();
        }
        x.writeCharacters("\n    ");
        x.writeStartElement("system-out");
        x.writeCharacters(r.verdict().label() + ": " + r.detail() + "\nanswers: " + r.answers()
            + (r.effects().isPresent() ? "\neffects: " + r.effects().getAsLong() : ""));
        x.writeEndElement();
        x.writeCharacters("\n  ");
        x.writeEndElement();
      }
      x.writeCharacters("\n");
      x.writeEndElement();
      x.writeCharacters("\n");
      x.writeEndDocument();
      x.close();
    } catch (XMLStreamException e) {
      throw new IllegalStateException("cannot write JUnit XML", e);
    }
    return out.toString();
  }

  private static void property(XMLStreamWriter x, String name, String value) throws XMLStreamException {
    x.writeCharacters("\n    ");
    x.writeEmptyElement("property");
    x.writeAttribute("name", name);
    x.writeAttribute("value", value);
  }

  private static String seconds(Duration d) {
    return String.format(Locale.ROOT, "%.3f", d.toMillis() / 1000.0);
  }

  private static String abbreviate(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max - 3) + "...";
  }

  /** The labs' table layout: columns padded to their widest cell, a dashed line under the head. */
  static String format(List<String[]> rows) {
    int[] width = new int[rows.get(0).length];
    for (String[] row : rows) {
      for (int i = 0; i < row.length; i++) {
        width[i] = Math.max(width[i], row[i].length());
      }
    }
    StringBuilder sb = new StringBuilder();
    for (int r = 0; r < rows.size(); r++) {
      String[] row = rows.get(r);
      for (int i = 0; i < row.length; i++) {
        String cell = row[i];
        sb.append(i == 0 ? "" : "  ").append(i == row.length - 1 ? cell : cell + " ".repeat(width[i] - cell.length()));
      }
      sb.append('\n');
      if (r == 0) {
        for (int i = 0; i < row.length; i++) {
          sb.append(i == 0 ? "" : "  ").append("-".repeat(width[i]));
        }
        sb.append('\n');
      }
    }
    return sb.toString();
  }
}
