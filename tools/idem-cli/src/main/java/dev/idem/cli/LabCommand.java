package dev.idem.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.lab.GrpcLab;
import dev.idem.lab.HttpLab;
import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.lab.Lab;
import dev.idem.lab.LabReport;
import dev.idem.lab.PostgresDatabase;
import dev.idem.lab.ScenarioResult;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code idem lab}: the seed article's experiments, naive versus protected, on a real database. */
@Command(
    name = "lab",
    mixinStandardHelpOptions = true,
    versionProvider = IdemCommand.Version.class,
    description = {
      "Runs each scenario twice on a real database, 'naive' (no key table) and 'protected' (Idem), then counts the effects stored.",
      "The lab drops and recreates its own tables, idem_lab_effects and idem_lab_keys, on every run.",
      "Bundled drivers: SQLite, PostgreSQL, MariaDB/MySQL.",
      "Exit status: 0 when the protected variant kept every promise; 1 if it ever showed a duplicate effect, a wrong id or an error; 2 if the database cannot be used."
    })
final class LabCommand implements Callable<Integer> {

  /** The embedded default: an SQLite file in the working directory. */
  static final String DEFAULT_DB = "jdbc:sqlite:idem-lab.db";

  @Spec CommandSpec spec;

  @Option(
      names = "--db",
      paramLabel = "<JDBC URL>",
      defaultValue = DEFAULT_DB,
      description = "Database to run on (default: ${DEFAULT-VALUE}). Example: jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String db;

  @Option(
      names = "--concurrency",
      paramLabel = "N",
      defaultValue = "8",
      description = "Concurrent attempts in the 'concurrent' scenario (default: ${DEFAULT-VALUE}, 2 to 256).")
  int concurrency;

  @Option(names = "--json", description = "Print the results as JSON instead of a table.")
  boolean json;

  @Option(
      names = "--http",
      description = "Run the second article's six cases over real HTTP: two notes services (with and without Idem) behind a fault proxy that loses responses.")
  boolean http;

  @Option(
      names = "--grpc",
      description = "Run the same scenarios over gRPC: a unary method on a Netty server on loopback, naive and behind Idem's server interceptor (transactional mode on --db), called through a channel with Idem's client interceptor and a retry policy; effects counted in --db.")
  boolean grpc;

  @Option(
      names = "--stack",
      paramLabel = "servlet|webflux",
      defaultValue = "servlet",
      description = "The notes service --http runs: servlet (default), the Spring MVC service on SQLite files; webflux, the"
          + " Spring WebFlux service on R2DBC, on a PostgreSQL database per service that the lab creates on --db (default "
          + PostgresDatabase.DEFAULT_SERVER_URL + ") and drops.")
  String stack;

  @Option(
      names = "--notes-jar",
      paramLabel = "<path>",
      description = "The notes service jar for --http (default: " + SERVLET_JAR + ", with --stack webflux " + WEBFLUX_JAR + ").")
  Path notesJar;

  static final String SERVLET_JAR = "examples/notes-service/target/notes-service.jar";
  static final String WEBFLUX_JAR = "examples/notes-webflux/target/notes-webflux.jar";

  @picocli.CommandLine.Mixin QueueLabOptions queueLab;

  @picocli.CommandLine.Mixin StepsLabOptions stepsLab;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (concurrency < 2 || concurrency > 256) {
      err.println("idem lab: --concurrency must be between 2 and 256, was " + concurrency);
      return 2;
    }
    if (grpc && (http || queueLab.queue || stepsLab.steps)) {
      err.println("idem lab --grpc: --http, --queue and --steps are other labs");
      return 2;
    }
    if (queueLab.misuse() != null || queueLab.queue && (http || concurrency != 8)) {
      err.println(queueLab.misuse() != null ? queueLab.misuse() : "idem lab --queue: --http and --concurrency do not apply");
      return 2;
    }
    if (stepsLab.steps && (queueLab.queue || http || concurrency != 8)) {
      err.println("idem lab --steps: --queue, --http and --concurrency do not apply");
      return 2;
    }
    if (queueLab.queue) {
      return queueLab.run(db, json, out, err);
    }
    if (stepsLab.steps) {
      return stepsLab.run(db, json, out, err);
    }
    if (!http && !stack.equals("servlet")) {
      err.println("idem lab: --stack applies to --http only");
      return 2;
    }
    if (http) {
      if (!stack.equals("servlet") && !stack.equals("webflux")) {
        err.println("idem lab --http: --stack is servlet or webflux, was " + stack);
        return 2;
      }
      boolean webflux = stack.equals("webflux");
      if ((!webflux && !db.equals(DEFAULT_DB)) || concurrency != 8) {
        err.println("idem lab --http: --db and --concurrency do not apply: the HTTP lab runs two notes services on SQLite files of their own"
            + " (with --stack webflux, --db names the PostgreSQL server of their databases)");
        return 2;
      }
      String server = db.equals(DEFAULT_DB) ? PostgresDatabase.DEFAULT_SERVER_URL : db;
      if (webflux && !server.startsWith("jdbc:postgresql:")) {
        err.println("idem lab --http --stack webflux: --db must be a PostgreSQL server's JDBC URL (jdbc:postgresql://...), was " + Lab.redact(db));
        return 2;
      }
      return runHttp(webflux ? HttpLabRunner.Stack.WEBFLUX : HttpLabRunner.Stack.SERVLET, server, out, err);
    }
    LabReport report;
    try {
      report = grpc ? new GrpcLab(JdbcTarget.of(db), concurrency).run() : new Lab(JdbcTarget.of(db), concurrency).run();
    } catch (SQLException | IOException | RuntimeException e) {
      err.println("idem lab" + (grpc ? " --grpc" : "") + ": cannot run on " + Lab.redact(db) + ": " + e.getMessage());
      return 2;
    }
    String transport = grpc ? GrpcLab.TRANSPORT : null;
    out.print(json ? toJson(report, transport) : toTable(report, transport));
    out.flush();
    return report.protectedOk() ? 0 : 1;
  }

  private int runHttp(HttpLabRunner.Stack service, String server, PrintWriter out, PrintWriter err) throws Exception {
    boolean webflux = service == HttpLabRunner.Stack.WEBFLUX;
    Path jar = notesJar != null ? notesJar : Path.of(webflux ? WEBFLUX_JAR : SERVLET_JAR);
    if (!Files.isRegularFile(jar)) {
      err.println("idem lab --http: the notes service jar is missing: " + jar
          + " (build it with ./mvnw -B -q -DskipTests package, or pass --notes-jar)");
      return 2;
    }
    List<HttpLab.Row> rows;
    try (HttpLabRunner runner = new HttpLabRunner(jar, service, server, err)) {
      rows = runner.run();
    } catch (IOException e) {
      err.println("idem lab --http: " + e.getMessage());
      return 2;
    } catch (SQLException e) {
      err.println("idem lab --http --stack webflux: cannot create the services' databases on " + Lab.redact(server) + ": " + e.getMessage());
      return 2;
    }
    boolean ok = rows.stream().allMatch(HttpLab.Row::ok);
    if (json) {
      ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
      ObjectNode root = mapper.createObjectNode();
      root.put("database", webflux ? "PostgreSQL (WebFlux notes service, R2DBC)" : "SQLite (notes service)");
      root.put("ok", ok);
      ArrayNode results = root.putArray("results");
      for (HttpLab.Row r : rows) {
        ObjectNode row = results.addObject();
        row.put("case", r.name());
        if (r.sends() >= 0) {
          row.put("sends", r.sends());
        } else {
          row.putNull("sends");
        }
        row.put("notesStored", r.notesStored());
        row.put("result", r.result());
        row.put("expectedNotes", r.expectedNotes());
        row.put("ok", r.ok());
      }
      out.print(mapper.writeValueAsString(root) + System.lineSeparator());
    } else {
      List<String[]> table = new ArrayList<>();
      table.add(new String[] {"case", "sends", "notes stored", "result for the caller"});
      for (HttpLab.Row r : rows) {
        table.add(new String[] {r.name(), r.sends() < 0 ? "-" : String.valueOf(r.sends()), String.valueOf(r.notesStored()), r.result()});
      }
      if (webflux) {
        out.println("notes service: Spring WebFlux on Reactor Netty, R2DBC on PostgreSQL (" + Lab.redact(server) + ", a database per service)");
        out.println();
      }
      out.print(format(table));
      out.println();
      out.println("sends: POSTs that reached the fault proxy. notes stored: counted through the service afterwards.");
      out.println(ok ? "every row matches the article's table" : "FAILED: a row differs from the article's table");
    }
    out.flush();
    return ok ? 0 : 1;
  }

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
        sb.append(i == 0 ? "" : "  ").append(pad(row[i], i == row.length - 1 ? 0 : width[i]));
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

  static String toJson(LabReport report, String transport) throws Exception {
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode root = mapper.createObjectNode();
    root.put("database", report.database());
    root.put("url", report.url());
    if (transport != null) {
      root.put("transport", transport);
    }
    root.put("protectedOk", report.protectedOk());
    ArrayNode results = root.putArray("results");
    for (ScenarioResult r : report.results()) {
      ObjectNode row = results.addObject();
      row.put("scenario", r.scenario());
      row.put("variant", r.variant());
      row.put("attempts", r.attempts());
      row.put("effects", r.effects());
      ArrayNode ids = row.putArray("ids");
      r.ids().forEach(ids::add);
      row.put("rejected", r.rejected());
      row.put("lostResponses", r.lostResponses());
      row.put("errors", r.errors());
      row.put("intendedEffects", r.intendedEffects());
      row.put("verdict", r.verdict());
    }
    return mapper.writeValueAsString(root) + System.lineSeparator();
  }

  static String toTable(LabReport report, String transport) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"scenario", "variant", "attempts", "effects", "ids returned", "rejected", "verdict"});
    for (ScenarioResult r : report.results()) {
      rows.add(new String[] {
        r.scenario(),
        r.variant(),
        String.valueOf(r.attempts()),
        String.valueOf(r.effects()),
        ids(r),
        String.valueOf(r.rejected()),
        r.verdict()
      });
    }
    StringBuilder sb = new StringBuilder();
    sb.append("database: ").append(report.database()).append(" (").append(report.url()).append(")\n");
    if (transport != null) {
      sb.append("transport: ").append(transport).append('\n');
    }
    sb.append('\n');
    sb.append(format(rows));
    sb.append('\n')
        .append("effects: rows counted in the database afterwards. ids returned: the id each attempt got,\n")
        .append("'(lost)' where the response was dropped after the commit.")
        .append(transport != null ? "\nattempts: calls that reached the server, the channel's retries included.\n" : " ")
        .append("protected: ")
        .append(report.protectedOk() ? "ok, one effect per intended operation" : "FAILED")
        .append('\n');
    return sb.toString();
  }

  private static String ids(ScenarioResult r) {
    if (r.ids().size() > 4) {
      TreeSet<Long> distinct = new TreeSet<>(r.ids());
      if (distinct.size() == r.ids().size()) {
        return distinct.first() + ".." + distinct.last() + " (" + distinct.size() + " distinct)";
      }
      Map<Long, Long> counts = new TreeMap<>();
      r.ids().forEach(id -> counts.merge(id, 1L, Long::sum));
      List<String> groups = new ArrayList<>();
      counts.forEach((id, n) -> groups.add(id + " (x" + n + ")"));
      String joined = String.join(", ", groups);
      return joined.length() > 40 ? joined.substring(0, 37) + "..." : joined;
    }
    List<String> parts = new ArrayList<>();
    for (int i = 0; i < r.ids().size(); i++) {
      parts.add(r.ids().get(i) + (i < r.lostResponses() ? " (lost)" : ""));
    }
    if (r.rejected() > 0) {
      parts.add("rejected");
    }
    String joined = String.join(", ", parts);
    return joined.length() > 40 ? joined.substring(0, 37) + "..." : joined;
  }

  private static String pad(String s, int width) {
    return s.length() >= width ? s : s + " ".repeat(width - s.length());
  }
}
