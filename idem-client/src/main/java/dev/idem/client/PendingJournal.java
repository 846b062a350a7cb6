package dev.idem.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * A durable journal of pending operations in a directory, so that a process that restarts resumes
 * each operation with the same idempotency key instead of inventing a new one.
 *
 * <p>{@link IdempotentHttpClient} writes an entry (key, method, URI, headers, body) before the first
 * attempt and removes it once the outcome is final (a response that is not retried, or a rejection);
 * an operation whose outcome is unknown stays, to be resumed with {@link
 * IdempotentHttpClient#resumePending()}. Each entry is one file, {@code <sha256 of key>.op}, in
 * {@link Properties} format, written to a temporary file, forced to disk and moved into place
 * atomically, so a crash never leaves a half-written entry under its final name.
 *
 * <p>Thread-safe for distinct keys; one process per directory.
 */
public final class PendingJournal {

  private static final String SUFFIX = ".op";
  private static final String FORMAT = "idem-pending-operation/1";

  private final Path directory;

  private PendingJournal(Path directory) {
    this.directory = directory;
  }

  /**
   * @param directory where entries live; created if missing
   * @return the journal
   * @throws UncheckedIOException if the directory cannot be created
   */
  public static PendingJournal open(Path directory) {
    Objects.requireNonNull(directory, "directory");
    try {
      Files.createDirectories(directory);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create journal directory " + directory, e);
    }
    return new PendingJournal(directory);
  }

  /** @return the journal's directory */
  public Path directory() {
    return directory;
  }

  /**
   * Records an operation under its key, durably, before it is first sent.
   *
   * @throws UncheckedIOException if the entry cannot be written
   */
  public void record(String key, HttpOperation operation) {
    Properties p = new Properties();
    p.setProperty("format", FORMAT);
    p.setProperty("key", key);
    p.setProperty("method", operation.method());
    p.setProperty("uri", operation.uri().toString());
    List<Map.Entry<String, String>> headers = operation.headers();
    p.setProperty("headers", String.valueOf(headers.size()));
    for (int i = 0; i < headers.size(); i++) {
      p.setProperty("header." + i + ".name", headers.get(i).getKey());
      p.setProperty("header." + i + ".value", headers.get(i).getValue());
    }
    p.setProperty("body", Base64.getEncoder().encodeToString(operation.body()));
    Path target = fileOf(key);
    Path temp = directory.resolve(target.getFileName() + ".tmp");
    try {
      try (OutputStream out = Files.newOutputStream(temp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
        p.store(out, null);
      }
      try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.WRITE)) {
        channel.force(true);
      }
      try {
        Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write journal entry for key '" + key + "' in " + directory, e);
    }
  }

  /**
   * Removes the entry of a key whose outcome is final. Removing a missing entry does nothing.
   *
   * @throws UncheckedIOException if the entry exists and cannot be deleted
   */
  public void remove(String key) {
    try {
      Files.deleteIfExists(fileOf(key));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove journal entry for key '" + key + "'", e);
    }
  }

  /**
   * Reads every entry. A corrupt entry (unreadable, a missing field, a bad URI or body) is reported
   * in {@link Scan#corrupt()} with its file and the reason, and does not stop the others.
   *
   * @throws UncheckedIOException if the directory itself cannot be listed
   */
  public Scan scan() {
    List<Pending> pending = new ArrayList<>();
    List<Corrupt> corrupt = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*" + SUFFIX)) {
      for (Path file : files) {
        try {
          pending.add(read(file));
        } catch (IOException | RuntimeException e) {
          corrupt.add(new Corrupt(file, e.getClass().getSimpleName() + ": " + e.getMessage()));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list journal directory " + directory, e);
    }
    return new Scan(List.copyOf(pending), List.copyOf(corrupt));
  }

  private static Pending read(Path file) throws IOException {
    Properties p = new Properties();
    try (InputStream in = Files.newInputStream(file)) {
      p.load(in);
    }
    if (!FORMAT.equals(p.getProperty("format"))) {
      throw new IllegalArgumentException("not an Idem journal entry (format " + p.getProperty("format") + ")");
    }
    String key = required(p, "key");
    HttpOperation.Builder b = HttpOperation.builder(required(p, "method"), URI.create(required(p, "uri")));
    int headers = Integer.parseInt(required(p, "headers"));
    for (int i = 0; i < headers; i++) {
      b.header(required(p, "header." + i + ".name"), required(p, "header." + i + ".value"));
    }
    b.body(Base64.getDecoder().decode(required(p, "body")));
    return new Pending(key, b.idempotencyKey(key).build(), file);
  }

  private static String required(Properties p, String name) {
    String v = p.getProperty(name);
    if (v == null) {
      throw new IllegalArgumentException("missing field '" + name + "'");
    }
    return v;
  }

  private Path fileOf(String key) {
    return directory.resolve(sha256Hex(key) + SUFFIX);
  }

  /** The SHA-256 of the key's UTF-8 bytes in 64 lower-case hex digits: a file name for any key. */
  private static String sha256Hex(String key) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }

  /**
   * One pending operation read back.
   *
   * @param key its idempotency key
   * @param operation the operation, carrying the key
   * @param file where it is stored
   */
  public record Pending(String key, HttpOperation operation, Path file) {}

  /**
   * An entry that could not be read.
   *
   * @param file the entry's file, left in place for inspection
   * @param reason what is wrong with it
   */
  public record Corrupt(Path file, String reason) {}

  /**
   * The result of {@link #scan()}.
   *
   * @param pending the readable entries
   * @param corrupt the unreadable entries, each with its reason
   */
  public record Scan(List<Pending> pending, List<Corrupt> corrupt) {}
}
