package dev.idem.benchmarks;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Everything one harness run measured, for the report and the CSV files. */
final class Results {

  /** One fixed-duration run of one workload at one client count. */
  record Measurement(
      String database,
      String workload,
      int clients,
      double seconds,
      long ops,
      long errors,
      double opsPerSecond,
      double p50Millis,
      double p99Millis,
      double p999Millis,
      double meanMillis,
      double maxMillis,
      String firstError) {}

  /** One race: {@code clients} clients send the same key at once, {@code rounds} keys in a row. */
  record Race(
      String database,
      String workload,
      int clients,
      int rounds,
      long attempts,
      long effects,
      long keysWithEffect,
      long duplicates,
      long missing,
      long errors,
      String firstError) {}

  /** A key-shape run: Idem create with new keys of one shape on a table that already holds many. */
  record Shape(String database, String shape, long preloaded, double preloadSeconds, long tableBytes, Measurement run) {}

  /** One JMH result. */
  record Jmh(String benchmark, String params, String mode, long samples, double score, double error, String unit,
      double p50, double p99) {}

  /** A backend that was not measured, and why. */
  record Skipped(String database, String reason) {}

  final List<Measurement> measurements = new ArrayList<>();
  final List<Race> races = new ArrayList<>();
  final List<Shape> shapes = new ArrayList<>();
  final List<Jmh> jmh = new ArrayList<>();
  final List<Skipped> skipped = new ArrayList<>();
  /** database id to "product version" */
  final Map<String, String> versions = new LinkedHashMap<>();
  /** database id to its settings as read back */
  final Map<String, Map<String, String>> settings = new LinkedHashMap<>();
  String jmhNote;

  Measurement find(String database, String workload, int clients) {
    for (Measurement m : measurements) {
      if (m.database().equals(database) && m.workload().equals(workload) && m.clients() == clients) {
        return m;
      }
    }
    return null;
  }
}
