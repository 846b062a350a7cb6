package dev.idem.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** Writes RFC 4180 CSV: comma-separated, CRLF line ends, fields quoted only when they need it. */
public final class Csv {

  private Csv() {}

  /**
   * Formats one field: {@code null} and NaN as empty, a floating-point number with three decimals
   * and a dot, anything else with {@code toString()}; quoted when it contains a comma, a quote, CR
   * or LF (a quote doubled).
   */
  public static String field(Object value) {
    String s;
    if (value == null) {
      s = "";
    } else if (value instanceof Double || value instanceof Float) {
      double d = ((Number) value).doubleValue();
      s = Double.isNaN(d) || Double.isInfinite(d) ? "" : String.format(Locale.ROOT, "%.3f", d);
    } else {
      s = value.toString();
    }
    if (s.indexOf(',') >= 0 || s.indexOf('"') >= 0 || s.indexOf('\n') >= 0 || s.indexOf('\r') >= 0) {
      return '"' + s.replace("\"", "\"\"") + '"';
    }
    return s;
  }

  /** @return the fields joined by commas, without a line end */
  public static String line(List<?> fields) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < fields.size(); i++) {
      if (i > 0) {
        sb.append(',');
      }
      sb.append(field(fields.get(i)));
    }
    return sb.toString();
  }

  /** Writes a header line and the rows to {@code file} in UTF-8, replacing it. */
  public static void write(Path file, List<String> header, List<? extends List<?>> rows) throws IOException {
    StringBuilder sb = new StringBuilder(line(header)).append("\r\n");
    for (List<?> row : rows) {
      sb.append(line(row)).append("\r\n");
    }
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, sb, StandardCharsets.UTF_8);
  }
}
