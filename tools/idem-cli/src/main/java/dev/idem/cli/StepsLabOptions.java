package dev.idem.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.cli.steps.StepsLab;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The option of {@code idem lab --steps} (a mixin of {@link LabCommand}) and the printing of its
 * report: a table like {@code idem lab}'s, or JSON with {@code --json}.
 */
final class StepsLabOptions {

  @Option(
      names = "--steps",
      description = "Run the multi-step lab: a ride recorded, a card charged at a payment service over HTTP (through a fault proxy), a receipt written; the process killed after each step in turn and a charge's answer lost, naive against protected (steps with recovery points and a derived key for the charge), with rides, charges and receipts counted in --db.")
  boolean steps;

  /**
   * Runs the steps lab and prints its report.
   *
   * @return 0 when every protected row holds, 1 otherwise, 2 when the database cannot be used
   */
  int run(String db, boolean json, PrintWriter out, PrintWriter err) throws Exception {
    StepsLab.Report report;
    try {
      report = StepsLab.run(db);
    } catch (StepsLab.Unusable e) {
      err.println("idem lab --steps: " + e.getMessage());
      return 2;
    }
    out.print(json ? toJson(report) : toTable(report));
    out.flush();
    return report.protectedOk() ? 0 : 1;
  }

  static String toTable(StepsLab.Report report) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"run stopped", "variant", "finished by", "charge calls", "rides", "charges", "receipts", "verdict"});
    for (StepsLab.Row r : report.rows()) {
      rows.add(new String[] {
        r.row(), r.variant(), r.finishedBy(), String.valueOf(r.chargeCalls()), String.valueOf(r.rides()),
        String.valueOf(r.charges()), String.valueOf(r.receipts()), r.verdict()
      });
    }
    StringBuilder where = new StringBuilder();
    for (StepsLab.Row r : report.rows()) {
      if (r.variant().equals("naive")) {
        where.append("  ").append(r.row()).append(": ").append(r.killed()).append('\n');
      }
    }
    return "database: " + report.database() + " (" + report.url() + ")\n\n"
        + LabCommand.format(rows)
        + "\nrun stopped: where the first run ended (its process killed with SIGKILL, or its charge's answer lost)\n" + where
        + "charge calls: POST /charges that reached the payment service's proxy. rides, charges, receipts:\n"
        + "rows counted in the database afterwards. protected: "
        + (report.protectedOk() ? "ok, one ride, one charge and one receipt per operation" : "FAILED") + "\n";
  }

  static String toJson(StepsLab.Report report) throws Exception {
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode root = mapper.createObjectNode();
    root.put("database", report.database());
    root.put("url", report.url());
    root.put("protectedOk", report.protectedOk());
    ArrayNode results = root.putArray("results");
    for (StepsLab.Row r : report.rows()) {
      ObjectNode row = results.addObject();
      row.put("scenario", r.row());
      row.put("variant", r.variant());
      row.put("killed", r.killed());
      row.put("finishedBy", r.finishedBy());
      row.put("chargeCalls", r.chargeCalls());
      row.put("rides", r.rides());
      row.put("charges", r.charges());
      row.put("receipts", r.receipts());
      row.put("verdict", r.verdict());
      row.put("ok", r.ok());
    }
    return mapper.writeValueAsString(root) + System.lineSeparator();
  }
}
