package dev.idem.servlet.internal;

import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.Part;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collection;
import java.util.HexFormat;
import java.util.Locale;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * A {@code multipart/form-data} body (RFC 7578) as the container parsed it, with the container's
 * own multipart configuration ({@code @MultipartConfig} or its equivalent): the parts stay where
 * the container put them (memory or temporary files), the handler gets them from {@code
 * getParts()}, and the filter fingerprints them without holding them in memory.
 *
 * <p>The digest is the SHA-256 of the media type {@code multipart/form-data} and, for each part in
 * the order sent, its name, its submitted file name (or none), its {@code Content-Type} (type and
 * subtype lower-cased, parameters as sent), its content length and the SHA-256 of its content
 * bytes, each length-prefixed or of fixed length, so that two different bodies never share the
 * encoding. The boundary and the order of
 * the part header fields are not in it: clients (browsers, curl, most libraries) choose a new
 * random boundary for every attempt, so a retry with the same fields and files is the same
 * request. Immutable and thread-safe once read.
 *
 * @param hex the digest, 64 lower-case hexadecimal digits
 * @param bytes the sum of the parts' content lengths
 */
public record FormParts(String hex, long bytes) {

  /** What reading the parts can end with, besides parts. */
  public static final class Unreadable extends Exception {
    private static final long serialVersionUID = 1L;

    private final boolean tooLarge;

    Unreadable(String message, boolean tooLarge, Throwable cause) {
      super(message, cause, false, false);
      this.tooLarge = tooLarge;
    }

    /** @return whether the container refused the body for one of its size limits */
    public boolean tooLarge() {
      return tooLarge;
    }
  }

  /**
   * @param contentType a request's {@code Content-Type}, may be {@code null}
   * @return whether it is {@code multipart/form-data}, ignoring case and parameters
   */
  public static boolean isFormData(@Nullable String contentType) {
    if (contentType == null) {
      return false;
    }
    int semi = contentType.indexOf(';');
    return (semi < 0 ? contentType : contentType.substring(0, semi)).trim().equalsIgnoreCase("multipart/form-data");
  }

  /**
   * @param contentType a request's {@code Content-Type}, may be {@code null}
   * @return whether it is {@code application/x-www-form-urlencoded}, ignoring case and parameters
   */
  public static boolean isUrlEncodedForm(@Nullable String contentType) {
    if (contentType == null) {
      return false;
    }
    int semi = contentType.indexOf(';');
    return (semi < 0 ? contentType : contentType.substring(0, semi)).trim().equalsIgnoreCase("application/x-www-form-urlencoded");
  }

  /**
   * Digests the parameters of a form body that the container has already parsed (an earlier filter
   * read a parameter, so the bytes are gone): the SHA-256 of the media type and of every parameter
   * name, in sorted order, with its values in the order sent, each length-prefixed. It covers the
   * query string's parameters too, which the fingerprint binds anyway.
   *
   * @param request the container's request, never {@code null}
   * @return the digest; {@link #bytes()} is the sum of the names' and values' UTF-8 lengths
   */
  public static FormParts ofParameters(HttpServletRequest request) {
    MessageDigest sha = sha256();
    field(sha, "application/x-www-form-urlencoded; parsed");
    long total = 0;
    for (var entry : new TreeMap<>(request.getParameterMap()).entrySet()) {
      field(sha, entry.getKey());
      String[] values = entry.getValue() == null ? new String[0] : entry.getValue();
      field(sha, Integer.toString(values.length));
      total += entry.getKey().getBytes(StandardCharsets.UTF_8).length;
      for (String v : values) {
        field(sha, v);
        total += v == null ? 0 : v.getBytes(StandardCharsets.UTF_8).length;
      }
    }
    return new FormParts(HexFormat.of().formatHex(sha.digest()), total);
  }

  /**
   * Has the container parse the body into parts and digests them.
   *
   * @param request the container's request, whose body nobody has read, never {@code null}
   * @return the digest, or {@code null} when the container has no multipart configuration for the
   *     request's servlet (its {@code getParts()} refuses before reading anything), so the body is
   *     left for the application to read as bytes
   * @throws Unreadable if the container refused the body (malformed, or over one of its limits)
   * @throws IOException if reading a part fails
   */
  public static @Nullable FormParts read(HttpServletRequest request) throws Unreadable, IOException {
    Collection<Part> parts;
    try {
      parts = request.getParts();
    } catch (IllegalStateException | ServletException e) {
      if (noConfiguration(e)) {
        return null;
      }
      throw new Unreadable(describe(e), tooLarge(e), e);
    } catch (IOException e) {
      // Tomcat reports a body without a boundary, or one that ends before its closing boundary, as
      // an IOException (FileUploadException): the request's fault, so a 400, never a 500.
      throw new Unreadable(describe(e), tooLarge(e), e);
    }
    MessageDigest sha = sha256();
    field(sha, "multipart/form-data");
    long total = 0;
    byte[] buffer = new byte[8192];
    for (Part part : parts) {
      field(sha, part.getName());
      String file = part.getSubmittedFileName();
      sha.update((byte) (file == null ? 0 : 1));
      if (file != null) {
        field(sha, file);
      }
      field(sha, normalisedType(part.getContentType()));
      MessageDigest content = sha256();
      long size = 0;
      try (InputStream in = part.getInputStream()) {
        for (int n; (n = in.read(buffer)) >= 0; ) {
          content.update(buffer, 0, n);
          size += n;
        }
      }
      field(sha, Long.toString(size));
      sha.update(content.digest()); // fixed length: the encoding stays unambiguous
      total += size;
    }
    return new FormParts(HexFormat.of().formatHex(sha.digest()), total);
  }

  /**
   * Jetty ("No multipart configuration element", wrapped in a ServletException), Tomcat ("no
   * multi-part configuration") and Undertow ("multipart config was not present") refuse with an
   * IllegalStateException that names the configuration, before reading the body.
   */
  private static boolean noConfiguration(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof IllegalStateException && String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT).contains("config")) {
        return !tooLarge(t);
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return false;
  }

  private static boolean tooLarge(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      String m = String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT);
      if (m.contains("exceed") || m.contains("too large") || m.contains("max ") || m.contains("limit")) {
        return true;
      }
    }
    return false;
  }

  private static String describe(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String m = root.getMessage() != null ? root.getMessage() : e.getMessage();
    return m == null ? root.getClass().getSimpleName() : m;
  }

  /** Type and subtype lower-cased, parameters kept as sent; empty when absent. */
  private static String normalisedType(@Nullable String type) {
    if (type == null) {
      return "";
    }
    int semi = type.indexOf(';');
    String base = (semi < 0 ? type : type.substring(0, semi)).trim().toLowerCase(Locale.ROOT);
    return semi < 0 ? base : base + ";" + type.substring(semi + 1).trim();
  }

  /** The UTF-8 bytes of {@code s}, prefixed by their count and a colon. */
  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }

  private static void field(MessageDigest sha, @Nullable String s) {
    byte[] bytes = (s == null ? "" : s).getBytes(StandardCharsets.UTF_8);
    sha.update((bytes.length + ":").getBytes(StandardCharsets.US_ASCII));
    sha.update(bytes);
  }
}
