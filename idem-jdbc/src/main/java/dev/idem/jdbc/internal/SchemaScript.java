package dev.idem.jdbc.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/** Reads a shipped schema file and names its table. Stateless and thread-safe. Not public API. */
public final class SchemaScript {

  /** The table name used in the shipped SQL files. */
  public static final String DEFAULT_TABLE = "idem_keys";

  private static final Pattern TABLE_TOKEN = Pattern.compile("\\bidem_keys");

  private SchemaScript() {}

  /**
   * @param resource class-path resource of a schema file
   * @param table the table name to use instead of {@value #DEFAULT_TABLE}: a plain SQL identifier,
   *     already validated
   * @return the statements of the file, comments removed, in order
   */
  public static List<String> statements(String resource, String table) {
    String sql;
    try (InputStream in = SchemaScript.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("schema resource not found: " + resource);
      }
      sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    StringBuilder body = new StringBuilder();
    for (String line : sql.split("\n")) {
      if (!line.strip().startsWith("--")) {
        body.append(line).append('\n');
      }
    }
    String named = TABLE_TOKEN.matcher(body).replaceAll(table);
    List<String> statements = new ArrayList<>();
    for (String statement : named.split(";")) {
      if (!statement.isBlank()) {
        statements.add(statement.strip());
      }
    }
    return statements;
  }
}
