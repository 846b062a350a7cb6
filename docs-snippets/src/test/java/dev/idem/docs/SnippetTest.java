package dev.idem.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Holds every {@code ```java} block of README.md and docs/ to the source it was taken from. Each
 * block must follow a marker line {@code <!-- snippet: Source#tag -->}, where {@code Source} is a
 * class of this module's test sources, relative to its package ({@code JdbcQuickStart},
 * {@code spring/NotesController}), or a path from the repository's root
 * ({@code idem-core/src/test/java/dev/idem/core/FingerprintPropertiesTest.java}), and {@code tag}
 * names the region between {@code // tag::tag[]} and {@code // end::tag[]} in it. The block must
 * equal the region, indentation normalised; so a snippet is compiled (and, where the sources run
 * it, executed) by the build, and one that drifts from the code fails it.
 *
 * <p>After changing a tagged region, copy it into the Markdown again; the failure message shows
 * the text expected.
 */
class SnippetTest {

  private static final Pattern MARKER = Pattern.compile("^<!-- snippet: ([^#\\s]+)#([\\w.-]+) -->$");
  private static final String SOURCES = "docs-snippets/src/test/java/dev/idem/docs/";

  /** @return the repository's root: the first directory upwards that holds docs-snippets */
  static Path root() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("docs-snippets"))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new IllegalStateException("no repository root above " + Path.of("").toAbsolutePath());
    }
    return dir;
  }

  /** @return README.md and every Markdown file under docs/ */
  static List<Path> markdownFiles(Path root) throws IOException {
    List<Path> files = new ArrayList<>();
    files.add(root.resolve("README.md"));
    try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
    }
    return files;
  }

  @Test
  void everyJavaBlockEqualsItsTaggedSource() throws IOException {
    Path root = root();
    List<String> problems = new ArrayList<>();
    int checked = 0;
    for (Path file : markdownFiles(root)) {
      List<String> lines = Files.readAllLines(file);
      String name = root.relativize(file).toString();
      for (int i = 0; i < lines.size(); i++) {
        if (!lines.get(i).strip().equals("```java")) {
          continue;
        }
        int end = i + 1;
        while (end < lines.size() && !lines.get(end).strip().equals("```")) {
          end++;
        }
        String block = normalise(lines.subList(i + 1, Math.min(end, lines.size())));
        Matcher marker = i > 0 ? MARKER.matcher(lines.get(i - 1).strip()) : null;
        if (marker == null || !marker.matches()) {
          problems.add(name + ":" + (i + 1) + ": a ```java block without a <!-- snippet: Source#tag --> line above it");
        } else {
          String region;
          try {
            region = region(root, marker.group(1), marker.group(2));
          } catch (IllegalArgumentException e) {
            problems.add(name + ":" + i + ": " + e.getMessage());
            i = end;
            continue;
          }
          if (!region.equals(block)) {
            problems.add(name + ":" + (i + 1) + ": the block differs from " + marker.group(1) + "#" + marker.group(2)
                + "; expected:\n" + region);
          }
          checked++;
        }
        i = end;
      }
    }
    System.out.println("SnippetTest: " + checked + " Java snippets checked against their sources");
    assertThat(problems).as("snippets out of step with their sources").isEmpty();
    assertThat(checked).as("snippets found").isPositive();
  }

  /**
   * Was: the README's Spring Boot properties had comments after the values ({@code
   * idem.principal=shared  # the one required ...}); a properties file has no such comments, so the
   * comment became part of the value and the copied configuration did not start. Every
   * {@code ```properties} block must load with {@link java.util.Properties} to values without a
   * {@code #}.
   */
  @Test
  void propertiesBlocksLoadWithoutCommentsInTheirValues() throws IOException {
    Path root = root();
    List<String> problems = new ArrayList<>();
    int blocks = 0;
    for (Path file : markdownFiles(root)) {
      List<String> lines = Files.readAllLines(file);
      for (int i = 0; i < lines.size(); i++) {
        if (!lines.get(i).strip().equals("```properties")) {
          continue;
        }
        int end = i + 1;
        while (end < lines.size() && !lines.get(end).strip().equals("```")) {
          end++;
        }
        java.util.Properties loaded = new java.util.Properties();
        loaded.load(new java.io.StringReader(String.join("\n", lines.subList(i + 1, Math.min(end, lines.size())))));
        for (String name : loaded.stringPropertyNames()) {
          if (loaded.getProperty(name).contains("#")) {
            problems.add(root.relativize(file) + ":" + (i + 1) + ": " + name + " would be '" + loaded.getProperty(name) + "'");
          }
        }
        blocks++;
        i = end;
      }
    }
    assertThat(problems).as("properties whose value holds a comment").isEmpty();
    assertThat(blocks).as("properties blocks found").isPositive();
  }

  /** @return the tagged region of the source, without its tag lines, normalised */
  static String region(Path root, String source, String tag) {
    Path own = root.resolve(SOURCES + source + ".java");
    Path file = Files.exists(own) ? own : root.resolve(source);
    List<String> lines;
    try {
      lines = Files.readAllLines(file);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + root.relativize(file) + ": " + e, e);
    }
    String start = "// tag::" + tag + "[]";
    String stop = "// end::" + tag + "[]";
    int from = -1;
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (line.equals(start)) {
        if (from >= 0) {
          throw new IllegalArgumentException(tag + " opens twice in " + source);
        }
        from = i + 1;
      } else if (line.equals(stop) && from >= 0) {
        List<String> region = new ArrayList<>();
        for (String l : lines.subList(from, i)) {
          if (!l.strip().matches("// (tag|end)::[\\w.-]+\\[\\]")) {
            region.add(l);
          }
        }
        return normalise(region);
      }
    }
    throw new IllegalArgumentException("no region " + start + " ... " + stop + " in " + root.relativize(file));
  }

  /** Trailing blanks and the indentation common to all non-blank lines removed. */
  static String normalise(List<String> lines) {
    int indent = Integer.MAX_VALUE;
    for (String line : lines) {
      if (!line.isBlank()) {
        indent = Math.min(indent, line.length() - line.stripLeading().length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (String line : lines) {
      out.append(line.isBlank() ? "" : line.substring(indent).stripTrailing()).append('\n');
    }
    return out.toString().strip() + "\n";
  }
}
