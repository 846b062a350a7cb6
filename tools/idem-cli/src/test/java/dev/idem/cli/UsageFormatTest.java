package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Picocli descriptions are format strings: a bare {@code %} makes picocli print a "Could not
 * format" warning to {@code System.err} (its tracer) and fall back to the raw text.
 */
class UsageFormatTest {

  @Test
  void checkHelpShowsTheLikeExampleWithoutCouldNotFormatWarnings() {
    Captured usage = usage(IdemCommand.commandLine().getSubcommands().get("check"));

    assertThat(usage.text).contains("LIKE '%' || ? || '%'");
    assertThat(usage.text.replaceAll("\\s+", " ")).contains("{{key-uuid}} (optional) a fresh UUID per Idempotency-Key");
    // the example stays on one line, to be copied
    assertThat(usage.text).contains("    --body '{\"number\":\"{{key-uuid}}\",\"note\":\"check-{{uuid}}\"}' \\\n");
    assertThat(usage.stderr).doesNotContain("Could not format");
  }

  @Test
  void noCommandHelpPrintsCouldNotFormatWarnings() {
    List<CommandLine> all = new ArrayList<>();
    collect(IdemCommand.commandLine(), all);
    assertThat(all).hasSizeGreaterThan(1);
    for (CommandLine command : all) {
      Captured usage = usage(command);
      assertThat(usage.stderr).as(command.getCommandName()).doesNotContain("Could not format");
    }
  }

  private static void collect(CommandLine command, List<CommandLine> into) {
    into.add(command);
    for (Map.Entry<String, CommandLine> sub : command.getSubcommands().entrySet()) {
      collect(sub.getValue(), into);
    }
  }

  private record Captured(String text, String stderr) {}

  /** The command's usage, and what picocli printed to System.err while producing it. */
  private static Captured usage(CommandLine command) {
    StringWriter text = new StringWriter();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream previous = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      command.usage(new PrintWriter(text, true));
    } finally {
      System.setErr(previous);
    }
    return new Captured(text.toString(), err.toString(StandardCharsets.UTF_8));
  }
}
