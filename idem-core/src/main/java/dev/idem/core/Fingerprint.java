package dev.idem.core;

import dev.idem.core.internal.Digests;
import dev.idem.core.internal.FormCanonicalizer;
import dev.idem.core.internal.JsonCanonicalizer;
import dev.idem.core.internal.JsonCanonicalizer.Canonical;
import dev.idem.core.internal.MediaType;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The SHA-256 digest of what makes two requests the same request: two requests that reuse an
 * idempotency key must carry the same fingerprint, or the second one is a different request. Two
 * requests get the same fingerprint only if they denote the same data.
 *
 * <h2>JSON payloads</h2>
 *
 * {@link #ofJson(byte[])} digests a canonical form of the RFC 8259 JSON text, so member order,
 * insignificant whitespace, escape spelling ({@code "\}{@code u00e9"} and {@code "é"}) and number
 * spelling ({@code 1}, {@code 1.0}, {@code 1e0}, {@code 10E-1}, {@code 100e-2}) do not change the
 * fingerprint. The canonical form is RFC 8785 (JSON Canonicalization Scheme) <em>except for
 * numbers</em>:
 *
 * <ul>
 *   <li>RFC 8785 §3.2.2.3 first converts every number to the nearest IEEE-754 double, so {@code
 *       1234567890123456789} and {@code 1234567890123456700}, or {@code 0.1} and {@code
 *       0.10000000000000001}, become one number, and a second request would be answered with the
 *       first one's stored response. Idem writes the <strong>exact decimal value</strong> instead:
 *       the significant digits (leading and trailing zeros removed) in RFC 8785's (ECMAScript's)
 *       layout. Equal values have one text; different values, at any magnitude or precision, never
 *       share one.
 *   <li>For every number that is the shortest round-trip form of a double (every integer of
 *       magnitude below 2^53, every decimal of at most 15 significant digits within the double
 *       range, every number as JavaScript's {@code JSON.stringify} prints it) the text is byte
 *       for byte what RFC 8785 produces.
 *   <li>Numbers beyond the double range ({@code 1e400}), which RFC 8785 rejects, and below it
 *       ({@code 1e-400}), which RFC 8785 turns into {@code 0}, are accepted and kept exact ({@code
 *       1e+400}, {@code 1e-400}). A nonzero number whose decimal exponent (that of its first
 *       significant digit) is beyond ±999,999,999 is refused with {@link InvalidPayloadException},
 *       whatever its spelling; time and memory stay linear in the input's length.
 *   <li>{@code -0} is {@code 0}, as in RFC 8785: JSON numbers are decimal values (RFC 8259 §6),
 *       and decimal arithmetic has one zero.
 * </ul>
 *
 * Strings are compared as the code points they denote, never Unicode-normalised (U+00E9 and
 * U+0065 U+0301, both shown as é, differ); duplicate member names, lone surrogates, invalid UTF-8
 * and trailing data are refused rather than guessed at; one leading byte order mark is ignored
 * (RFC 8259 §8.1). Canonical forms are therefore equal exactly when the JSON values are equal.
 *
 * <h2>Form payloads</h2>
 *
 * A request body of {@code application/x-www-form-urlencoded} (without content coding, in no
 * charset or an ASCII-compatible one: {@code utf-8}, {@code us-ascii}, {@code iso-8859-1}) is
 * digested as its fields, so the same fields sent in another order are the same request:
 *
 * <ul>
 *   <li>the body is split at each {@code &} into fields and each field at its first {@code =};
 *       in names and values {@code +} is a space and {@code %XX} the byte it denotes, so {@code
 *       a=%20} and {@code a=+} are equal (both a space) while {@code a=%2B} (a plus sign) is not;
 *   <li>fields are sorted by their decoded name, byte by byte, and the sort is stable: fields of
 *       one name keep their relative order, which applications read as a list ({@code
 *       a=1&b=2&a=3} equals {@code b=2&a=1&a=3}, but not {@code a=3&b=2&a=1});
 *   <li>names and values are digested length-prefixed, so an encoded delimiter never reads as one
 *       ({@code a=1&b=2} and {@code a=1%26b%3D2} differ); {@code a} and {@code a=} differ, and
 *       empty fields count;
 *   <li>a body with a {@code %} not followed by two hexadecimal digits is compared byte for byte,
 *       under a tag of its own, so it never equals a decoded one.
 * </ul>
 *
 * <h2>Requests</h2>
 *
 * {@link #request()} digests an HTTP request: method, request target, media type, content coding
 * and body, each normalised as its builder describes. The HTTP filter of {@code idem-servlet} uses
 * it, so the same bytes sent as {@code application/json} and as {@code text/plain} are different
 * requests, whatever their spacing.
 *
 * <p>Instances are immutable and safe to share between threads. Two fingerprints are {@link
 * #equals(Object) equal} when their 32 digest bytes are equal.
 */
public final class Fingerprint {

  private static final int LENGTH = 32;

  private final byte[] digest;

  /** Lazily computed; a benign race, as {@link String} is immutable. */
  private @Nullable String hex;

  private Fingerprint(byte[] digest) {
    this.digest = digest;
  }

  /**
   * Fingerprints a JSON payload: SHA-256 over its canonical form (RFC 8785 with exact numbers, as
   * the class describes). The media type is not part of it: use this where an operation accepts
   * JSON only, and {@link #request()} where a request may come in several media types.
   *
   * <p>The input must be one RFC 8259 JSON text in UTF-8 (a leading byte order mark is ignored)
   * with the restrictions of RFC 8785 §3.1 on names and strings: no duplicate member names, no lone
   * surrogates; nesting at most 1000 levels deep; and no nonzero number whose decimal exponent is
   * beyond ±999,999,999 (numbers beyond the double range are accepted).
   *
   * @param utf8Json the payload, never {@code null}; not modified
   * @return the fingerprint, never {@code null}
   * @throws NullPointerException if {@code utf8Json} is {@code null}
   * @throws InvalidPayloadException if {@code utf8Json} is not valid UTF-8 JSON as above; the
   *     message names the problem and its byte offset
   */
  public static Fingerprint ofJson(byte[] utf8Json) {
    Objects.requireNonNull(utf8Json, "utf8Json");
    Canonical canonical = JsonCanonicalizer.canonicalForm(utf8Json);
    MessageDigest md = Digests.newSha256();
    md.update(canonical.array(), 0, canonical.length());
    return new Fingerprint(md.digest());
  }

  /**
   * The canonical form that {@link #ofJson(byte[])} digests (RFC 8785 with exact numbers, as the
   * class describes): for a client that sends its bodies canonical, or to see why two bodies are,
   * or are not, the same request. {@code ofJson(json)} equals {@code ofBytes(canonicalJson(json))},
   * and a text in canonical form is its own canonical form. Accepts what {@link #ofJson(byte[])}
   * accepts.
   *
   * @param utf8Json one JSON text in UTF-8, never {@code null}; not modified
   * @return a new array with the canonical form in UTF-8, never {@code null}
   * @throws NullPointerException if {@code utf8Json} is {@code null}
   * @throws InvalidPayloadException if {@code utf8Json} is not valid UTF-8 JSON as {@link
   *     #ofJson(byte[])} requires; the message names the problem and its byte offset
   */
  public static byte[] canonicalJson(byte[] utf8Json) {
    return JsonCanonicalizer.canonicalize(Objects.requireNonNull(utf8Json, "utf8Json"));
  }

  /**
   * Fingerprints an opaque payload: SHA-256 over its bytes exactly as given.
   *
   * @param payload the payload, never {@code null} (use an empty array for no body); not modified
   * @return the fingerprint, never {@code null}
   * @throws NullPointerException if {@code payload} is {@code null}
   */
  public static Fingerprint ofBytes(byte[] payload) {
    Objects.requireNonNull(payload, "payload");
    return digest(payload);
  }

  /**
   * Fingerprints a payload together with its media type: the same as {@code
   * request().contentType(mediaType).body(payload).build()} (see {@link RequestBuilder}). The same
   * bytes under two media types that mean different things have different fingerprints; a JSON
   * payload is canonicalized, so its spacing does not matter.
   *
   * @param mediaType the payload's media type, such as a {@code Content-Type} header value; {@code
   *     null} when the request has none, which differs from every media type
   * @param payload the payload, never {@code null}; not modified
   * @return the fingerprint, never {@code null}
   * @throws NullPointerException if {@code payload} is {@code null}
   * @throws InvalidPayloadException if the media type is JSON in UTF-8 but the non-empty {@code
   *     payload} is not valid JSON (see {@link #ofJson(byte[])})
   */
  public static Fingerprint of(@Nullable String mediaType, byte[] payload) {
    return request().contentType(mediaType).body(payload).build();
  }

  /**
   * Starts the fingerprint of an HTTP request.
   *
   * @return a new builder, with every part absent; not thread-safe
   */
  public static RequestBuilder request() {
    return new RequestBuilder();
  }

  /**
   * Tells whether a media type denotes JSON: {@code application/json} or any {@code type/subtype}
   * whose subtype ends with the {@code +json} structured syntax suffix (RFC 6839 §3.1), such as
   * {@code application/problem+json}. The comparison ignores case and any parameters after a {@code
   * ;} (RFC 9110 §8.3.1), e.g. {@code Application/JSON; charset=utf-8} is JSON.
   *
   * @param mediaType a media type or {@code Content-Type} value; may be {@code null}
   * @return {@code true} if it denotes JSON; {@code false} for {@code null} or anything else
   */
  public static boolean isJson(@Nullable String mediaType) {
    if (mediaType == null) {
      return false;
    }
    int end = mediaType.indexOf(';');
    if (end < 0) {
      end = mediaType.length();
    }
    int start = 0;
    while (start < end && isHttpWhitespace(mediaType.charAt(start))) {
      start++;
    }
    while (end > start && isHttpWhitespace(mediaType.charAt(end - 1))) {
      end--;
    }
    int slash = mediaType.indexOf('/', start);
    if (slash <= start || slash >= end) {
      return false;
    }
    int length = end - start;
    if (length == 16 && mediaType.regionMatches(true, start, "application/json", 0, 16)) {
      return true;
    }
    // type "/" subtype, subtype = 1*char "+json"
    return end - slash - 1 > 5 && mediaType.regionMatches(true, end - 5, "+json", 0, 5);
  }

  /**
   * Parses a fingerprint from its {@link #hex()} form.
   *
   * @param hex64 exactly 64 hexadecimal digits, upper or lower case, never {@code null}
   * @return the fingerprint, never {@code null}
   * @throws NullPointerException if {@code hex64} is {@code null}
   * @throws IllegalArgumentException if {@code hex64} is not 64 hexadecimal digits
   */
  public static Fingerprint fromHex(String hex64) {
    Objects.requireNonNull(hex64, "hex64");
    if (hex64.length() != 2 * LENGTH) {
      throw new IllegalArgumentException(
          "a fingerprint is 64 hex digits, got " + hex64.length() + " characters");
    }
    for (int i = 0; i < 2 * LENGTH; i++) {
      if (!HexFormat.isHexDigit(hex64.charAt(i))) {
        throw new IllegalArgumentException(
            "a fingerprint is 64 hex digits, found a non-hex character at index " + i);
      }
    }
    return new Fingerprint(HexFormat.of().parseHex(hex64));
  }

  /**
   * The digest as 64 lowercase hexadecimal digits, the form stores persist.
   *
   * @return 64 characters {@code [0-9a-f]}, never {@code null}
   */
  public String hex() {
    String h = hex;
    if (h == null) {
      h = Digests.hex(digest);
      hex = h;
    }
    return h;
  }

  /**
   * The 32 digest bytes.
   *
   * @return a new copy on every call, never {@code null}; changing it does not affect this
   *     fingerprint
   */
  public byte[] bytes() {
    return digest.clone();
  }

  /**
   * Two fingerprints are equal when their digest bytes are equal.
   *
   * @param other any object, may be {@code null}
   * @return whether {@code other} is a fingerprint with the same digest
   */
  @Override
  public boolean equals(@Nullable Object other) {
    return other instanceof Fingerprint && Arrays.equals(digest, ((Fingerprint) other).digest);
  }

  /**
   * A hash consistent with {@link #equals(Object)}.
   *
   * @return the first four digest bytes as an {@code int}
   */
  @Override
  public int hashCode() {
    return ((digest[0] & 0xFF) << 24)
        | ((digest[1] & 0xFF) << 16)
        | ((digest[2] & 0xFF) << 8)
        | (digest[3] & 0xFF);
  }

  /**
   * A debugging form, {@code Fingerprint[sha256=<64 lowercase hex digits>]}.
   *
   * @return the text, never {@code null}
   */
  @Override
  public String toString() {
    return "Fingerprint[sha256=" + hex() + "]";
  }

  /**
   * Builds the fingerprint of one HTTP request from the parts that decide what it asks for. A part
   * that is never set is absent, which differs from every value: a request without {@code
   * Content-Type} is not an {@code application/json} one, and one without a query differs from one
   * with an empty query ({@code /notes} and {@code /notes?}).
   *
   * <table>
   *   <caption>What the request fingerprint covers</caption>
   *   <tr><th>part</th><th>compared as</th><th>why</th></tr>
   *   <tr><td>{@link #method(String) method}</td><td>as sent, case-sensitive (RFC 9110 §9.1)</td>
   *       <td>{@code PUT} and {@code PATCH} of the same body ask for different things</td></tr>
   *   <tr><td>{@link #target(String) target}</td><td>path and query exactly as sent, not decoded,
   *       not reordered</td><td>{@code /a%2Fb} and {@code /a/b} can name different resources, and
   *       how an application reads {@code +}, {@code %20}, repeated or reordered query parameters
   *       is its own choice; two spellings of one target are refused (422), never confused</td></tr>
   *   <tr><td>{@link #contentType(String) media type}</td><td>normalised: type, subtype and
   *       parameter names lower-cased, parameters sorted, quoting undone, {@code charset} values
   *       lower-cased, and for JSON {@code charset=utf-8} dropped (RFC 8259 §8.1, §11); a value that
   *       does not parse is compared as sent</td><td>it says how the body is to be read: the same
   *       bytes as {@code application/json} and as {@code text/plain} are different requests
   *       (the second may well be refused with 415)</td></tr>
   *   <tr><td>{@link #contentEncoding(String) content coding}</td><td>the codings lower-cased, in
   *       order (RFC 9110 §8.4)</td><td>the same bytes with and without {@code gzip} are different
   *       content</td></tr>
   *   <tr><td>{@link #body(byte[]) body}</td><td>for a non-empty body of a JSON media type in
   *       UTF-8 without content coding, the canonical JSON form (see {@link Fingerprint}); for a
   *       non-empty {@code application/x-www-form-urlencoded} body without content coding, in no
   *       charset or {@code utf-8}, {@code us-ascii} or {@code iso-8859-1}, its fields decoded and
   *       sorted by name (see {@link Fingerprint}, "Form payloads"); any other body byte for
   *       byte</td><td>what the request asks to be done</td></tr>
   * </table>
   *
   * <p>Not covered: the principal and the operation, which are the {@link Scope} (a key of another
   * principal is another key, not a reused one); the idempotency key itself; every other header
   * field ({@code Accept}, {@code Accept-Language}, {@code Authorization}, {@code Cookie}, {@code
   * User-Agent}, {@code Date}, tracing fields), which describe the client, its credentials or the
   * representation it wants back rather than what is to be done, and which a retry may change
   * freely. A replay is the stored response as it was, whatever these say.
   *
   * <p>The parts are digested as tagged, length-prefixed fields, so no two different requests
   * share their digest input. Not thread-safe; a builder may be reused after {@link #build()}.
   */
  public static final class RequestBuilder {

    private static final byte[] VERSION =
        "idem-request/1\n".getBytes(StandardCharsets.US_ASCII);

    private @Nullable String method;
    private @Nullable String target;
    private @Nullable String contentType;
    private @Nullable String contentEncoding;
    private byte[] body = new byte[0];
    private @Nullable Fingerprint parsedBody;

    private RequestBuilder() {}

    /**
     * @param method the request method as sent, such as {@code POST}; {@code null} for absent
     * @return this builder
     */
    public RequestBuilder method(@Nullable String method) {
      this.method = method;
      return this;
    }

    /**
     * @param target the request target in origin form as sent (RFC 9112 §3.2.1): the path, and
     *     {@code ?} and the query when the request has one, without decoding; for a servlet,
     *     {@code getRequestURI()} plus {@code "?" + getQueryString()} when that is not {@code
     *     null}. {@code null} for absent
     * @return this builder
     */
    public RequestBuilder target(@Nullable String target) {
      this.target = target;
      return this;
    }

    /**
     * @param contentType the {@code Content-Type} field value as sent; {@code null} when the
     *     request has none
     * @return this builder
     */
    public RequestBuilder contentType(@Nullable String contentType) {
      this.contentType = contentType;
      return this;
    }

    /**
     * @param contentEncoding the {@code Content-Encoding} field value as sent, several fields
     *     joined with {@code ,}; {@code null} (or no codings) when the request has none
     * @return this builder
     */
    public RequestBuilder contentEncoding(@Nullable String contentEncoding) {
      this.contentEncoding = contentEncoding;
      return this;
    }

    /**
     * @param body the body bytes, never {@code null} (an empty array for no body); not copied,
     *     must not change until {@link #build()} returns
     * @return this builder
     * @throws NullPointerException if {@code body} is {@code null}
     */
    public RequestBuilder body(byte[] body) {
      this.body = Objects.requireNonNull(body, "body");
      this.parsedBody = null;
      return this;
    }

    /**
     * The body as a server framework parsed it, when its bytes are no longer available (a servlet
     * container's {@code multipart/form-data} parts, or form fields an earlier filter read), given
     * as the digest of a stable form of the parsed content (for multipart: each part's name, file
     * name, content type and content in order, not the boundary). It is digested under its own tag,
     * so it never equals a body given as bytes; replaces {@link #body(byte[])}.
     *
     * @param parsedBody the digest of the parsed body, never {@code null}
     * @return this builder
     * @throws NullPointerException if {@code parsedBody} is {@code null}
     */
    public RequestBuilder parsedBody(Fingerprint parsedBody) {
      this.parsedBody = Objects.requireNonNull(parsedBody, "parsedBody");
      this.body = new byte[0];
      return this;
    }

    /**
     * Digests the parts set so far.
     *
     * @return the fingerprint, never {@code null}
     * @throws InvalidPayloadException if the body is to be read as JSON (a non-empty body, a JSON
     *     media type in UTF-8, no content coding) and is not valid JSON as {@link
     *     Fingerprint#ofJson(byte[])} requires; the message names the problem and its byte offset
     */
    public Fingerprint build() {
      ContentType type = ContentType.of(contentType);
      MediaType mediaType = type == null ? null : type.mediaType;
      String codings = codings(contentEncoding);
      boolean json = parsedBody == null
          && body.length > 0 && mediaType != null && mediaType.isUtf8Json() && codings == null;
      byte[] payload;
      int payloadLength;
      byte[] form = null;
      if (json) {
        Canonical canonical = JsonCanonicalizer.canonicalForm(body);
        payload = canonical.array();
        payloadLength = canonical.length();
      } else {
        if (parsedBody == null && body.length > 0 && mediaType != null && mediaType.isAsciiUrlEncodedForm() && codings == null) {
          form = FormCanonicalizer.canonicalForm(body); // null for invalid percent-encoding: raw bytes
        }
        payload = parsedBody != null ? parsedBody.digest : form != null ? form : body;
        payloadLength = payload.length;
      }

      // every field before the payload, in one array and one update
      String typePart = type == null ? null : type.part;
      byte[] head =
          new byte[VERSION.length + partLength(method) + partLength(target)
              + partLength(typePart) + partLength(codings) + 1 + 8];
      System.arraycopy(VERSION, 0, head, 0, VERSION.length);
      int at = VERSION.length;
      at = part(head, at, 'M', method);
      at = part(head, at, 'T', target);
      at = part(head, at, 'C', typePart);
      at = part(head, at, 'E', codings);
      head[at++] = (byte) (parsedBody != null ? 'P' : json ? 'J' : form != null ? 'F' : 'B');
      longBytes(head, at, payloadLength);
      MessageDigest md = Digests.newSha256();
      md.update(head);
      md.update(payload, 0, payloadLength);
      return new Fingerprint(md.digest());
    }

    /**
     * A {@code Content-Type} value with its parsed media type and the text its field is digested
     * as; the last one seen is kept, since a service mostly receives one value over and over.
     */
    private static final class ContentType {

      /** The last value parsed: immutable, so a benign race at worst parses a value again. */
      private static @Nullable ContentType last;

      final String value;
      final @Nullable MediaType mediaType;
      final String part;

      private ContentType(String value) {
        this.value = value;
        this.mediaType = MediaType.parse(value);
        this.part = mediaType != null ? "=" + mediaType.canonical() : "!" + value;
      }

      /** @return the parsed value, or {@code null} for an absent field */
      static @Nullable ContentType of(@Nullable String value) {
        if (value == null) {
          return null;
        }
        ContentType cached = last;
        if (cached != null && cached.value.equals(value)) {
          return cached;
        }
        ContentType parsed = new ContentType(value);
        last = parsed;
        return parsed;
      }
    }

    /** Content codings lower-cased and in order, empty list elements dropped; null for none. */
    private static @Nullable String codings(@Nullable String field) {
      if (field == null) {
        return null;
      }
      StringBuilder sb = new StringBuilder(field.length());
      for (String element : field.split(",", -1)) {
        String coding = element.strip();
        if (coding.isEmpty()) {
          continue; // RFC 9110 §5.6.1: empty list elements do not count
        }
        if (sb.length() > 0) {
          sb.append(',');
        }
        sb.append(coding.toLowerCase(Locale.ROOT));
      }
      return sb.length() == 0 ? null : sb.toString();
    }

    /** The length of {@link #part}'s encoding of {@code value}. */
    private static int partLength(@Nullable String value) {
      return value == null ? 2 : 2 + 8 + 2 * value.length();
    }

    /**
     * Writes one tagged field at {@code at}: absent, or its length in UTF-16 units and its UTF-16
     * code units.
     *
     * @return the offset after it
     */
    private static int part(byte[] head, int at, char tag, @Nullable String value) {
      head[at++] = (byte) tag;
      if (value == null) {
        head[at++] = (byte) '-';
        return at;
      }
      head[at++] = (byte) '+';
      at = longBytes(head, at, value.length());
      for (int i = 0; i < value.length(); i++) {
        char c = value.charAt(i); // code units, not an encoder: lone surrogates stay distinct
        head[at++] = (byte) (c >> 8);
        head[at++] = (byte) c;
      }
      return at;
    }

    /** Writes {@code v} big-endian at {@code at}; returns the offset after it. */
    private static int longBytes(byte[] b, int at, long v) {
      for (int i = 7; i >= 0; i--) {
        b[at + i] = (byte) v;
        v >>>= 8;
      }
      return at + 8;
    }
  }

  private static Fingerprint digest(byte[] bytes) {
    return new Fingerprint(Digests.newSha256().digest(bytes));
  }

  private static boolean isHttpWhitespace(char c) {
    return c == ' ' || c == '\t';
  }
}
