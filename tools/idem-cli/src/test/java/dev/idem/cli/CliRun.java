package dev.idem.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** Runs the idem command line in-process and keeps what it printed, for the command tests. */
final class CliRun {

  final StringWriter out = new StringWriter();
  final StringWriter err = new StringWriter();

  /** @return the exit status of {@code idem args...} */
  int run(String... args) {
    CommandLine cli = IdemCommand.commandLine();
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    return cli.execute(args);
  }
}
