package dev.idem.core;

import dev.idem.core.spi.StoredResponseCodec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * How stores write and read the stored response of a record: in clear ({@link #none()}, the
 * default), or protected at rest with authenticated encryption under an application-supplied
 * keyring ({@link #builder()}).
 *
 * <p><b>What is protected.</b> The whole stored response: status, header fields and body bytes (the
 * encoded form of {@link StoredResponse}). The record's identity stays in clear, because stores look
 * records up by it: principal, operation, idempotency key, fingerprint, state, owner token and
 * timestamps. If principals are sensitive, give Idem a pseudonym (for example an HMAC of the user
 * id under a key of the application) as the scope's principal. With protection on, the JDBC stores
 * also leave their separate {@code status} column empty, so the status is only in the ciphertext.
 *
 * <p><b>Algorithm.</b> AES-256-GCM from the JDK ({@code javax.crypto}, NIST SP 800-38D), a fresh
 * random 12-byte nonce per record from {@link SecureRandom}, and a 128-bit tag. Random nonces stay
 * within SP 800-38D section 8.3 for up to 2<sup>32</sup> records per key: rotate the current key
 * well before that (a yearly rotation, or every billion records).
 *
 * <p><b>Envelope</b>, version 1, all lengths in bytes:
 *
 * <pre>
 *  1  magic 'P' (0x50)            -- a plaintext record starts with 'I' (0x49)
 *  1  version 0x01
 *  1  n, length of the key id, 1 to 32
 *  n  key id, US-ASCII [A-Za-z0-9._-]
 * 12  nonce
 *  *  ciphertext of the encoded response, then the 16-byte GCM tag
 * </pre>
 *
 * <p>The associated data (authenticated, not stored) is the envelope header (magic, version, key
 * id), then the principal, the operation and the idempotency key, each as a 4-byte big-endian length
 * and its UTF-8 bytes, then the 32 fingerprint bytes. So a ciphertext copied into another record
 * (another principal, operation or key, even in the same table), or a record whose fingerprint was
 * changed, fails authentication exactly like a tampered one.
 *
 * <p><b>Failures.</b> A stored response that cannot be authenticated or decoded, one under a key id
 * the keyring does not hold, and a protected record read without a keyring, all throw {@link
 * StoredResponseUnreadableException}: the key stays answered (the effect never runs again) and
 * nothing is replayed.
 *
 * <p><b>Rotation.</b> The keyring holds named keys; the {@link Builder#currentKey current} one
 * protects every new record, and every key in the ring can read. To rotate: add the new key, make it
 * current, and keep the old one until the records it protected have expired (one retention period);
 * then remove it.
 *
 * <p><b>Turning it on and off.</b> Plaintext records written before protection was turned on stay
 * readable ({@link Builder#acceptPlaintextRecords(boolean)}, default {@code true}), so turning it on
 * is safe with live records; once one retention period has passed, refuse them so that a plaintext
 * record written into the table by someone without the key is not replayed. Turning it off ({@link
 * #none()}) makes every record written while it was on unreadable ({@link
 * StoredResponseUnreadableException}) until it expires: keep the keyring configured, with protection
 * on, for one more retention period first.
 *
 * <p>Immutable and thread-safe: a {@link Cipher} (not thread-safe) is created for every call. Key
 * bytes are copied in and never given out, not even by {@link #toString()}.
 */
public final class ResponseProtection {

  /** The length of every key: 32 bytes (AES-256). */
  public static final int KEY_BYTES = 32;

  /** The length of the random nonce: 12 bytes, as SP 800-38D recommends for GCM. */
  public static final int NONCE_BYTES = 12;

  /** The length of the authentication tag: 16 bytes (128 bits). */
  public static final int TAG_BYTES = 16;

  /** The longest key id, in characters: {@value}. */
  public static final int MAX_KEY_ID_LENGTH = 32;

  static final byte MAGIC = 'P';
  static final byte VERSION = 1;
  private static final byte PLAIN_MAGIC = 'I';
  private static final String TRANSFORMATION = "AES/GCM/NoPadding";
  private static final Pattern KEY_ID = Pattern.compile("[A-Za-z0-9._-]{1," + MAX_KEY_ID_LENGTH + "}");
  /** The nonces' generator, seeded once when this class loads: sealing never reads a file, so never blocks an event loop. */
  private static final SecureRandom RANDOM = SeededRandom.create();
  private static final ResponseProtection NONE = new ResponseProtection(Map.of(), null, true);

  private final Map<String, SecretKey> keys;
  private final @Nullable String currentKeyId;
  private final boolean acceptPlaintext;

  private ResponseProtection(Map<String, SecretKey> keys, @Nullable String currentKeyId, boolean acceptPlaintext) {
    this.keys = keys;
    this.currentKeyId = currentKeyId;
    this.acceptPlaintext = acceptPlaintext;
  }

  /**
   * No protection: responses are stored in clear. Reading a protected record then throws {@link
   * StoredResponseUnreadableException}, naming the key id it needs.
   *
   * @return the shared instance, never {@code null}
   */
  public static ResponseProtection none() {
    return NONE;
  }

  /** @return a builder for a keyring; not thread-safe */
  public static Builder builder() {
    return new Builder();
  }

  /** @return whether new records are encrypted ({@code false} only for {@link #none()}) */
  public boolean enabled() {
    return currentKeyId != null;
  }

  /** @return the id of the key that protects new records, or {@code null} for {@link #none()} */
  public @Nullable String currentKeyId() {
    return currentKeyId;
  }

  /** @return the ids of every key that can read, unmodifiable, never {@code null} */
  public Set<String> keyIds() {
    return keys.keySet();
  }

  /**
   * The bytes to store for a record's response: the encoded response, encrypted when {@link
   * #enabled()}.
   *
   * @param scope the record's scope, never {@code null}
   * @param key the record's idempotency key, never {@code null}
   * @param fingerprint the fingerprint stored with the record, never {@code null}
   * @param response the response, never {@code null}
   * @return a new byte array, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalStateException if the platform lacks AES/GCM (every Java SE 17 platform has it)
   */
  public byte[] seal(Scope scope, IdempotencyKey key, Fingerprint fingerprint, StoredResponse response) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(fingerprint, "fingerprint");
    byte[] plain = StoredResponseCodec.encode(Objects.requireNonNull(response, "response"));
    String keyId = currentKeyId;
    if (keyId == null) { // not enabled()
      return plain;
    }
    byte[] header = header(keyId);
    byte[] nonce = new byte[NONCE_BYTES];
    RANDOM.nextBytes(nonce);
    byte[] out = new byte[header.length + NONCE_BYTES + plain.length + TAG_BYTES];
    System.arraycopy(header, 0, out, 0, header.length);
    System.arraycopy(nonce, 0, out, header.length, NONCE_BYTES);
    try {
      Cipher cipher = Cipher.getInstance(TRANSFORMATION);
      cipher.init(Cipher.ENCRYPT_MODE, keys.get(keyId), new GCMParameterSpec(TAG_BYTES * 8, nonce));
      cipher.updateAAD(associatedData(header, scope, key, fingerprint));
      int written = cipher.doFinal(plain, 0, plain.length, out, header.length + NONCE_BYTES);
      if (written != plain.length + TAG_BYTES) {
        throw new IllegalStateException("AES/GCM wrote " + written + " bytes, expected " + (plain.length + TAG_BYTES));
      }
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES/GCM encryption failed: " + e.getMessage(), e);
    } finally {
      Arrays.fill(plain, (byte) 0);
    }
    return out;
  }

  /**
   * Reads the bytes a store holds for a record's response: an envelope (decrypted and
   * authenticated against the record's identity and fingerprint) or a plaintext record.
   *
   * @param scope the record's scope, never {@code null}
   * @param key the record's idempotency key, never {@code null}
   * @param fingerprint the fingerprint stored with the record, never {@code null}
   * @param stored the stored bytes, never {@code null}
   * @return the response, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   * @throws StoredResponseUnreadableException if the bytes fail authentication (tampered, or moved
   *     from another record), name a key id the keyring does not hold, are a protected record while
   *     protection is off, are a plaintext record this keyring refuses, or are not a stored
   *     response of a known version
   */
  public StoredResponse open(Scope scope, IdempotencyKey key, Fingerprint fingerprint, byte[] stored) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(stored, "stored");
    if (stored.length == 0) {
      throw new StoredResponseUnreadableException("the stored response is empty", null);
    }
    if (stored[0] == PLAIN_MAGIC) {
      if (enabled() && !acceptPlaintext) {
        throw new StoredResponseUnreadableException(
            "the stored response is in clear, and response protection refuses plaintext records (acceptPlaintextRecords is off)", null);
      }
      return decode(stored);
    }
    if (stored[0] != MAGIC) {
      throw new StoredResponseUnreadableException(
          "the stored response has an unknown format (first byte 0x" + HexFormat.of().toHexDigits(stored[0]) + ")", null);
    }
    if (stored.length < 3 || stored[1] != VERSION) {
      throw new StoredResponseUnreadableException(
          "the protected stored response has an unknown envelope version"
              + (stored.length < 2 ? "" : " (" + (stored[1] & 0xFF) + ")"), null);
    }
    int idLength = stored[2] & 0xFF;
    int headerLength = 3 + idLength;
    if (idLength < 1 || idLength > MAX_KEY_ID_LENGTH || stored.length < headerLength + NONCE_BYTES + TAG_BYTES) {
      throw new StoredResponseUnreadableException("the protected stored response is truncated or malformed", null);
    }
    String keyId = new String(stored, 3, idLength, StandardCharsets.US_ASCII);
    if (!enabled()) {
      throw new StoredResponseUnreadableException(
          "the stored response is protected with key id '" + printable(keyId) + "', but response protection is off:"
              + " configure the keyring that holds that key", null);
    }
    SecretKey secret = keys.get(keyId);
    if (secret == null) {
      throw new StoredResponseUnreadableException(
          "the stored response is protected with key id '" + printable(keyId) + "', which the keyring does not hold"
              + " (it holds " + keys.keySet() + ")", null);
    }
    byte[] header = Arrays.copyOfRange(stored, 0, headerLength);
    byte[] plain;
    try {
      Cipher cipher = Cipher.getInstance(TRANSFORMATION);
      cipher.init(Cipher.DECRYPT_MODE, secret, new GCMParameterSpec(TAG_BYTES * 8, stored, headerLength, NONCE_BYTES));
      cipher.updateAAD(associatedData(header, scope, key, fingerprint));
      int offset = headerLength + NONCE_BYTES;
      plain = cipher.doFinal(stored, offset, stored.length - offset);
    } catch (AEADBadTagException e) {
      throw new StoredResponseUnreadableException(
          "the protected stored response failed authentication with key id '" + keyId + "': it was altered, or it"
              + " belongs to another record (another principal, operation, idempotency key or fingerprint)", e);
    } catch (GeneralSecurityException e) {
      throw new StoredResponseUnreadableException("the protected stored response cannot be decrypted: " + e.getMessage(), e);
    }
    try {
      return decode(plain);
    } finally {
      Arrays.fill(plain, (byte) 0);
    }
  }

  /**
   * Whether stored bytes are a protected envelope (by their first byte), without reading further.
   *
   * @param stored the stored bytes, never {@code null}
   * @return {@code true} if they start with the envelope's magic byte
   */
  public static boolean isProtected(byte[] stored) {
    return stored.length > 0 && stored[0] == MAGIC;
  }

  /**
   * The value for a store's separate clear-text status column, where a store has one.
   *
   * @param response the response, never {@code null}
   * @return its status when protection is off; {@code null} when it is on, so that the status is
   *     only kept inside the ciphertext
   */
  public @Nullable Integer clearStatus(StoredResponse response) {
    return enabled() ? null : response.status();
  }

  /** Describes the keyring without key bytes: the current key id and the ids that can read. */
  @Override
  public String toString() {
    return enabled()
        ? "ResponseProtection[AES-256-GCM, current=" + currentKeyId + ", keys=" + keys.keySet()
            + (acceptPlaintext ? ", accepts plaintext records" : ", refuses plaintext records") + "]"
        : "ResponseProtection[none]";
  }

  private static StoredResponse decode(byte[] encoded) {
    try {
      return StoredResponseCodec.decode(encoded);
    } catch (StoredResponseUnreadableException e) {
      throw e;
    } catch (IdemStoreException e) {
      throw new StoredResponseUnreadableException(Objects.toString(e.getMessage(), "the stored response cannot be decoded"), e.getCause());
    }
  }

  private static byte[] header(String keyId) {
    byte[] id = keyId.getBytes(StandardCharsets.US_ASCII);
    byte[] header = new byte[3 + id.length];
    header[0] = MAGIC;
    header[1] = VERSION;
    header[2] = (byte) id.length;
    System.arraycopy(id, 0, header, 3, id.length);
    return header;
  }

  private static byte[] associatedData(byte[] header, Scope scope, IdempotencyKey key, Fingerprint fingerprint) {
    byte[] principal = scope.principal().getBytes(StandardCharsets.UTF_8);
    byte[] operation = scope.operation().getBytes(StandardCharsets.UTF_8);
    byte[] idemKey = key.value().getBytes(StandardCharsets.UTF_8);
    byte[] digest = fingerprint.bytes();
    ByteBuffer aad = ByteBuffer.allocate(header.length + 12 + principal.length + operation.length + idemKey.length + digest.length);
    aad.put(header);
    aad.putInt(principal.length).put(principal);
    aad.putInt(operation.length).put(operation);
    aad.putInt(idemKey.length).put(idemKey);
    aad.put(digest);
    return aad.array();
  }

  private static String printable(String keyId) {
    return KEY_ID.matcher(keyId).matches() ? keyId : "(malformed)";
  }

  /**
   * Builds a keyring. Not thread-safe; every call validates eagerly, and {@link #build()} checks the
   * whole.
   */
  public static final class Builder {
    private final Map<String, SecretKey> keys = new LinkedHashMap<>();
    private @Nullable String currentKeyId;
    private boolean acceptPlaintext = true;

    private Builder() {}

    /**
     * Adds a key that can read records, and protect new ones if it is made {@link #currentKey
     * current}.
     *
     * @param id 1 to {@value ResponseProtection#MAX_KEY_ID_LENGTH} characters {@code
     *     [A-Za-z0-9._-]}, stored in clear in every record it protects; never {@code null}
     * @param key exactly {@value ResponseProtection#KEY_BYTES} bytes from a cryptographically
     *     strong source, copied; never {@code null}
     * @return this builder
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if the id is malformed or already added, or the key is not
     *     32 bytes
     */
    public Builder key(String id, byte[] key) {
      checkId(id);
      Objects.requireNonNull(key, "key");
      if (key.length != KEY_BYTES) {
        throw new IllegalArgumentException(
            "response protection key '" + id + "' must be " + KEY_BYTES + " bytes (AES-256), was " + key.length);
      }
      if (keys.containsKey(id)) {
        throw new IllegalArgumentException("response protection key '" + id + "' is given twice");
      }
      keys.put(id, new SecretKeySpec(key, "AES"));
      return this;
    }

    /**
     * Same as {@link #key(String, byte[])} with the key in base64 (RFC 4648 section 4, padding
     * optional), the form configuration files carry.
     *
     * @param base64Key the base64 text of 32 bytes, never {@code null}
     * @throws IllegalArgumentException if the text is not base64 of 32 bytes, or as {@link
     *     #key(String, byte[])}
     */
    public Builder key(String id, String base64Key) {
      checkId(id);
      Objects.requireNonNull(base64Key, "base64Key");
      byte[] bytes;
      try {
        bytes = Base64.getDecoder().decode(base64Key.trim());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("response protection key '" + id + "' is not valid base64", e);
      }
      try {
        return key(id, bytes);
      } finally {
        Arrays.fill(bytes, (byte) 0);
      }
    }

    /**
     * @param id the id of the key that protects new records; it must be added with {@link #key} by
     *     the time {@link #build()} runs
     * @return this builder
     * @throws NullPointerException if {@code id} is {@code null}
     * @throws IllegalArgumentException if it is malformed
     */
    public Builder currentKey(String id) {
      checkId(id);
      this.currentKeyId = id;
      return this;
    }

    /**
     * @param accept whether records in clear (written before protection was turned on) are still
     *     replayed; default {@code true}. Set it to {@code false} once one retention period has
     *     passed since protection was turned on: then a plaintext record is refused ({@link
     *     StoredResponseUnreadableException}), so nobody who can write to the store but lacks the
     *     key can plant a response to be replayed
     * @return this builder
     */
    public Builder acceptPlaintextRecords(boolean accept) {
      this.acceptPlaintext = accept;
      return this;
    }

    /**
     * @return a new, immutable and thread-safe protection
     * @throws IllegalStateException if no key was added, no current key was chosen, or the current
     *     key is not in the keyring
     */
    public ResponseProtection build() {
      if (keys.isEmpty()) {
        throw new IllegalStateException("response protection needs at least one key");
      }
      if (currentKeyId == null) {
        throw new IllegalStateException("response protection needs a current key: one of " + keys.keySet());
      }
      if (!keys.containsKey(currentKeyId)) {
        throw new IllegalStateException(
            "the current response protection key '" + currentKeyId + "' is not in the keyring " + keys.keySet());
      }
      return new ResponseProtection(Collections.unmodifiableMap(new LinkedHashMap<>(keys)), currentKeyId, acceptPlaintext);
    }

    private static void checkId(String id) {
      Objects.requireNonNull(id, "id");
      if (!KEY_ID.matcher(id).matches()) {
        throw new IllegalArgumentException(
            "a response protection key id is 1 to " + MAX_KEY_ID_LENGTH + " characters [A-Za-z0-9._-], was '"
                + (id.length() > 40 ? id.substring(0, 40) + "..." : id) + "'");
      }
    }
  }
}
