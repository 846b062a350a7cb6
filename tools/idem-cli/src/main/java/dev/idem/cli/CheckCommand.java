package dev.idem.cli;

import dev.idem.check.ApiUnreachableException;
import dev.idem.check.CheckReport;
import dev.idem.check.IdemCheck;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code idem check}: the three pieces of evidence, and the IETF draft's details, for any HTTP API. */
@Command(
    name = "check",
    mixinStandardHelpOptions = true,
    versionProvider = IdemCommand.Version.class,
    sortOptions = false,
    description = {
      "Exercises one create endpoint of a running HTTP API and prints a verdict per check: a response lost after"
          + " the commit (through a fault proxy), concurrent duplicates, a key reused with different content, a"
          + " control that proves the counting sees duplicates, the IETF draft's details, and fingerprint sanity.",
      "Every request carries a body made from --body, where {{uuid}} becomes a fresh UUID per check (the marker"
          + " effects are counted by), {{key-uuid}} (optional) a fresh UUID per Idempotency-Key, the same in every"
          + " retry of that key (for a field the API keeps unique, such as an order number), and {{number}}"
          + " (optional) a JSON number.",
      "Effects are counted from the answers (ids, Location) unless --count-url or --count-sql gives a real count.",
      "At most (concurrency + 16) requests to the API, plus 12 count queries with a real count.",
      "Exit status: 0 when every required check passes; 1 when one fails; 2 when the API cannot be reached or the"
          + " options are wrong."
    },
    footer = {
      "",
      "For an API that keeps an order number unique (it would answer the control's second key with its own 409):",
      "  idem check http://127.0.0.1:8080/orders \\",
      "    --body '{\"number\":\"{{key-uuid}}\",\"note\":\"check-{{uuid}}\"}' \\",
      "    --count-url http://127.0.0.1:8080/orders"
    })
final class CheckCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Parameters(index = "0", paramLabel = "<URL>", description = "The create endpoint, for example http://127.0.0.1:8080/notes")
  String url;

  @Option(names = "--body", required = true, paramLabel = "<template>",
      description = "The request body, with {{uuid}}, for example '{\"title\":\"check-{{uuid}}\"}'; {{key-uuid}}"
          + " in a field the API keeps unique (see the example below).")
  String body;

  @Option(names = {"-H", "--header"}, paramLabel = "<name: value>",
      description = "A header field for every request, for example 'Authorization: Bearer ...' (repeatable)."
          + " Content-Type replaces the default application/json.")
  List<String> headers = new ArrayList<>();

  @Option(names = {"-X", "--method"}, defaultValue = "POST", paramLabel = "<method>",
      description = "POST, PUT or PATCH (default: ${DEFAULT-VALUE}).")
  String method;

  @Option(names = "--concurrency", defaultValue = "8", paramLabel = "N",
      description = "Attempts with one key released together (default: ${DEFAULT-VALUE}, 2 to 64).")
  int concurrency;

  @Option(names = "--count-url", paramLabel = "<URL>",
      description = "Count effects through this GET: the elements of its JSON array that contain the marker"
          + " (or, with --count-all, the array's length or its \"total\").")
  URI countUrl;

  @Option(names = "--count-all", description = "With --count-url: count every element (or \"total\"), not only"
      + " those with the marker; run the check alone on the API.")
  boolean countAll;

  @Option(names = "--count-sql", paramLabel = "<query>",
      description = "Count effects with this SQL query on --db; each ? is bound to the marker, for example"
          + " \"SELECT COUNT(*) FROM notes WHERE title LIKE '%%' || ? || '%%'\".")
  String countSql;

  @Option(names = "--db", paramLabel = "<JDBC URL>",
      description = "The database for --count-sql (SQLite, PostgreSQL and MariaDB/MySQL drivers are bundled).")
  String db;

  @Option(names = "--settle", defaultValue = "1000", paramLabel = "<ms>",
      description = "Pause before reusing a key in the key-reuse and fingerprint checks (default: ${DEFAULT-VALUE}).")
  long settleMillis;

  @Option(names = "--timeout", defaultValue = "30", paramLabel = "<s>",
      description = "Timeout of each request, in seconds (default: ${DEFAULT-VALUE}).")
  long timeoutSeconds;

  @Option(names = "--json", description = "Print the report as JSON instead of a table.")
  boolean json;

  @Option(names = "--junit", paramLabel = "<file>", description = "Also write the report as JUnit XML to this file.")
  Path junit;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    IdemCheck check;
    try {
      check = configure();
    } catch (IllegalArgumentException | IllegalStateException e) {
      err.println("idem check: " + e.getMessage());
      err.flush();
      return 2;
    }
    CheckReport report;
    try {
      report = check.run();
    } catch (ApiUnreachableException e) {
      err.println("idem check: " + e.getMessage());
      err.flush();
      return 2;
    }
    out.print(json ? report.toJson() : report.toTable());
    out.flush();
    if (junit != null) {
      try {
        Path parent = junit.toAbsolutePath().getParent();
        if (parent != null) {
          Files.createDirectories(parent);
        }
        Files.writeString(junit, report.toJUnitXml(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        err.println("idem check: cannot write " + junit + ": " + e.getMessage());
        err.flush();
        return 2;
      }
    }
    return report.exitStatus();
  }

  private IdemCheck configure() {
    URI target;
    try {
      target = URI.create(url);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("not a URL: " + url);
    }
    IdemCheck.Builder b = IdemCheck.builder(target)
        .method(method)
        .body(body)
        .concurrency(concurrency)
        .settle(Duration.ofMillis(settleMillis))
        .timeout(Duration.ofSeconds(timeoutSeconds));
    for (String h : headers) {
      int colon = h.indexOf(':');
      if (colon <= 0) {
        throw new IllegalArgumentException("-H wants 'Name: value', got '" + h + "'");
      }
      b.header(h.substring(0, colon), h.substring(colon + 1));
    }
    if (countUrl != null && countSql != null) {
      throw new IllegalArgumentException("--count-url and --count-sql exclude each other");
    }
    if (countAll && countUrl == null) {
      throw new IllegalArgumentException("--count-all goes with --count-url");
    }
    if ((countSql == null) != (db == null)) {
      throw new IllegalArgumentException("--count-sql and --db go together");
    }
    if (countUrl != null) {
      b.countUrl(countUrl, !countAll);
    } else if (countSql != null) {
      b.countSql(db, countSql);
    }
    if (settleMillis < 0 || timeoutSeconds < 1) {
      throw new IllegalArgumentException("--settle must be 0 or more and --timeout 1 or more");
    }
    return b.build();
  }
}
