package dev.idem.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every relative link of README.md and docs/ leads somewhere: its file exists, and a {@code #anchor}
 * into a Markdown file names one of its headings (GitHub's anchors: lower case, punctuation
 * dropped, spaces as hyphens, {@code -1}, {@code -2} for repeated headings). Links in fenced
 * blocks and code spans are not links; absolute ones ({@code https:} and the like) are not checked.
 * Was: nothing checked them, and moving a page (the reports into docs/reports/) left every link to
 * it to be found by hand.
 */
class LinkTest {

  private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
  private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
  private static final Pattern CODE_SPAN = Pattern.compile("`[^`\n]*`");

  @Test
  void everyRelativeLinkLeadsToAFileAndAHeading() throws IOException {
    Path root = SnippetTest.root();
    Map<Path, Set<String>> anchors = new HashMap<>();
    List<String> problems = new ArrayList<>();
    int checked = 0;
    for (Path file : SnippetTest.markdownFiles(root)) {
      List<String> lines = prose(Files.readAllLines(file));
      for (int i = 0; i < lines.size(); i++) {
        Matcher m = LINK.matcher(CODE_SPAN.matcher(lines.get(i)).replaceAll(""));
        while (m.find()) {
          String target = m.group(1);
          if (target.matches("[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
            continue; // https:, mailto: and the like
          }
          checked++;
          int hash = target.indexOf('#');
          String path = hash < 0 ? target : target.substring(0, hash);
          Path linked = path.isEmpty() ? file : file.getParent().resolve(path).normalize();
          String where = root.relativize(file) + ":" + (i + 1) + ": " + target;
          if (!Files.exists(linked)) {
            problems.add(where + ": no such file");
          } else if (hash >= 0 && linked.toString().endsWith(".md")) {
            Set<String> known = anchors.get(linked);
            if (known == null) {
              known = anchorsOf(linked);
              anchors.put(linked, known);
            }
            if (!known.contains(target.substring(hash + 1))) {
              problems.add(where + ": no such heading in " + root.relativize(linked));
            }
          }
        }
      }
    }
    System.out.println("LinkTest: " + checked + " relative links checked");
    assertThat(problems).as("links that lead nowhere").isEmpty();
    assertThat(checked).as("relative links found").isPositive();
  }

  /** @return the lines outside fenced blocks (those inside as empty lines, to keep the numbering) */
  static List<String> prose(List<String> lines) {
    List<String> out = new ArrayList<>();
    boolean fenced = false;
    for (String line : lines) {
      boolean fence = line.strip().startsWith("```");
      out.add(fenced || fence ? "" : line);
      if (fence) {
        fenced = !fenced;
      }
    }
    return out;
  }

  /** @return the anchors GitHub gives the headings of a Markdown file */
  static Set<String> anchorsOf(Path file) throws IOException {
    Set<String> anchors = new HashSet<>();
    Map<String, Integer> seen = new HashMap<>();
    for (String line : prose(Files.readAllLines(file))) {
      Matcher m = HEADING.matcher(line);
      if (!m.matches()) {
        continue;
      }
      String slug = m.group(1).toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N}_\\- ]", "").replace(' ', '-');
      int n = seen.merge(slug, 1, Integer::sum) - 1;
      anchors.add(n == 0 ? slug : slug + "-" + n);
    }
    return anchors;
  }
}
