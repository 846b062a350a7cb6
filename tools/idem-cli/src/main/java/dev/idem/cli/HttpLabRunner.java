package dev.idem.cli;

import dev.idem.lab.HttpLab;
import dev.idem.lab.NotesServiceProcess;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Starts two notes services from their jar (one with Idem, one with {@code idem.enabled=false}),
 * each on its own SQLite file, runs {@link HttpLab} against them, and stops them. Not thread-safe.
 */
final class HttpLabRunner implements AutoCloseable {

  private final Path jar;
  private final PrintWriter err;
  private final Path dir;
  private NotesServiceProcess withIdem;
  private NotesServiceProcess withoutIdem;

  HttpLabRunner(Path jar, PrintWriter err) throws IOException {
    this.jar = jar;
    this.err = err;
    this.dir = Files.createTempDirectory("idem-http-lab-");
  }

  List<HttpLab.Row> run() throws IOException, InterruptedException {
    withIdem = NotesServiceProcess.start(jar, dir, "protected", true);
    withoutIdem = NotesServiceProcess.start(jar, dir, "unprotected", false);
    return new HttpLab(withIdem.base(), withoutIdem.base()).run();
  }

  @Override
  public void close() {
    if (withIdem != null) {
      withIdem.close();
    }
    if (withoutIdem != null) {
      withoutIdem.close();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      err.println("idem lab: could not remove " + dir + ": " + e.getMessage());
    }
  }
}
