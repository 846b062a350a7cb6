package dev.idem.r2dbc;

/**
 * Turns the JDBC placeholders of idem-jdbc's statements ({@code ?}) into PostgreSQL's numbered
 * ones ({@code $1}, {@code $2}, ... in order of appearance), which r2dbc-postgresql requires.
 * A {@code ?} inside a quoted literal or identifier ({@code '...'}, {@code "..."}) is left alone.
 * Stateless and thread-safe.
 */
final class Placeholders {

  private Placeholders() {}

  /** @return {@code sql} with its placeholders numbered from 1 */
  static String numbered(String sql) {
    StringBuilder out = new StringBuilder(sql.length() + 16);
    int n = 0;
    char quote = 0;
    for (int i = 0; i < sql.length(); i++) {
      char ch = sql.charAt(i);
      if (quote != 0) {
        if (ch == quote) {
          quote = 0;
        }
        out.append(ch);
      } else if (ch == '\'' || ch == '"') {
        quote = ch;
        out.append(ch);
      } else if (ch == '?') {
        out.append('$').append(++n);
      } else {
        out.append(ch);
      }
    }
    return out.toString();
  }
}
