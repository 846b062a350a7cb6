package dev.idem.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.cli.queue.QueueLab;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The options of {@code idem lab --queue} (a mixin of {@link LabCommand}) and the printing of its
 * report: a table like {@code idem lab}'s, or JSON with {@code --json}.
 */
final class QueueLabOptions {

  @Option(
      names = "--queue",
      description = "Run the outbox and idempotent-consumer lab on a real broker: three crashes (a consumer killed between its commit and its ack, a relay killed between its publish and marking the intent sent, a request killed after sending but before its commit), naive against protected, with the effects counted in --db.")
  boolean queue;

  @Option(
      names = "--broker",
      paramLabel = "rabbitmq|jetstream|kafka",
      description = "Broker for --queue (default: rabbitmq).")
  String broker;

  @Option(
      names = "--broker-url",
      paramLabel = "<URL>",
      description = "Broker URL for --queue (default: amqp://guest:guest@127.0.0.1:5672 for rabbitmq, nats://127.0.0.1:4222 for jetstream, the bootstrap servers 127.0.0.1:9092 for kafka; NATS needs JetStream enabled, Kafka must allow a 6 s session timeout).")
  String brokerUrl;

  /** @return an error message when a --queue option is used without --queue, else {@code null} */
  String misuse() {
    if (!queue && (broker != null || brokerUrl != null)) {
      return "idem lab: --broker and --broker-url apply to --queue only";
    }
    if (queue && broker != null && !broker.equals("rabbitmq") && !broker.equals("jetstream") && !broker.equals("kafka")) {
      return "idem lab --queue: --broker must be rabbitmq, jetstream or kafka, was '" + broker + "'";
    }
    return null;
  }

  /**
   * Runs the queue lab and prints its report.
   *
   * @return 0 when every protected row holds, 1 otherwise, 2 when the broker or database cannot be used
   */
  int run(String db, boolean json, PrintWriter out, PrintWriter err) throws Exception {
    QueueLab.Report report;
    try {
      report = QueueLab.run(broker == null ? "rabbitmq" : broker, brokerUrl, db);
    } catch (QueueLab.Unusable e) {
      err.println("idem lab --queue: " + e.getMessage());
      return 2;
    }
    out.print(json ? toJson(report) : toTable(report));
    out.flush();
    return report.protectedOk() ? 0 : 1;
  }

  static String toTable(QueueLab.Report report) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"scenario", "variant", "process killed", "published", "stored", "deliveries", "effects", "verdict"});
    for (QueueLab.Row r : report.rows()) {
      rows.add(new String[] {
        r.scenario(), r.variant(), r.killed(), String.valueOf(r.published()), String.valueOf(r.stored()),
        r.deliveries() < 0 ? "-" : String.valueOf(r.deliveries()), String.valueOf(r.effects()), r.verdict()
      });
    }
    return "broker: " + report.broker() + " (" + report.brokerUrl() + ")\n"
        + "database: " + report.database() + " (" + report.url() + ")\n\n"
        + LabCommand.format(rows)
        + "\npublished: messages the sending side had confirmed by the broker. stored: copies the broker kept for\n"
        + "each consumer. deliveries: to consumers, the killed one included. effects: rows counted in the\n"
        + "database afterwards. protected: "
        + (report.protectedOk() ? "ok, one effect and one message per operation" : "FAILED") + "\n";
  }

  static String toJson(QueueLab.Report report) throws Exception {
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode root = mapper.createObjectNode();
    root.put("broker", report.broker());
    root.put("brokerUrl", report.brokerUrl());
    root.put("database", report.database());
    root.put("url", report.url());
    root.put("protectedOk", report.protectedOk());
    ArrayNode results = root.putArray("results");
    for (QueueLab.Row r : report.rows()) {
      ObjectNode row = results.addObject();
      row.put("scenario", r.scenario());
      row.put("variant", r.variant());
      row.put("killed", r.killed());
      row.put("published", r.published());
      row.put("stored", r.stored());
      if (r.deliveries() < 0) {
        row.putNull("deliveries");
      } else {
        row.put("deliveries", r.deliveries());
      }
      row.put("effects", r.effects());
      row.put("verdict", r.verdict());
      row.put("ok", r.ok());
    }
    return mapper.writeValueAsString(root) + System.lineSeparator();
  }
}
