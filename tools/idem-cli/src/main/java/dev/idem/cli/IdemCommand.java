package dev.idem.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code idem} command line. Entry point of the executable jar. */
@Command(
    name = "idem",
    mixinStandardHelpOptions = true,
    versionProvider = IdemCommand.Version.class,
    description = "Idem: idempotency keys, so that a retry returns the first result instead of a second effect.",
    subcommands = {LabCommand.class, CheckCommand.class, PurgeCommand.class, CommandLine.HelpCommand.class})
public final class IdemCommand {

  /**
   * Runs the command line and exits with its status.
   *
   * @param args the arguments, for example {@code lab --db jdbc:postgresql://...}
   */
  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /** @return the configured command line, for tests */
  public static CommandLine commandLine() {
    return new CommandLine(new IdemCommand());
  }

  /** Reads the version from the jar's manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = IdemCommand.class.getPackage().getImplementationVersion();
      return new String[] {"idem " + (v == null ? "development build" : v)};
    }
  }
}
