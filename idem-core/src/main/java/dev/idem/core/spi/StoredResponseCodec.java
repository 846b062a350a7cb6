package dev.idem.core.spi;

import dev.idem.core.IdemStoreException;
import dev.idem.core.StoredResponse;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;

/**
 * The byte format of a {@link StoredResponse}, for stores that keep a response in one binary
 * column or one field (the JDBC key table, the Redis hash). A store written for Idem uses it so
 * that its records read the same as the other stores' and stay readable across Idem versions.
 *
 * <p>Format, all integers big-endian: magic {@code 'I'} (1 byte), version {@code 1} (1 byte),
 * status (2 bytes, unsigned), number of header values (2 bytes, unsigned, so at most 65,535), then
 * for each value its name and value as modified-UTF-8 strings ({@link DataOutputStream#writeUTF}:
 * a 2-byte length, then at most 65,535 bytes), in the order of {@link StoredResponse#headers()},
 * then the body length in bytes (4 bytes) and the body. Headers that {@link StoredResponse} keeps
 * for itself (such as {@link StoredResponse#BODY_NOT_STORED_HEADER}) travel as headers. A later
 * version of the format gets another version byte; {@link #decode} refuses versions it does not
 * know rather than guessing.
 *
 * <p>The codec neither encrypts nor compresses: a store that protects responses at rest seals the
 * encoded bytes (as {@link dev.idem.core.ResponseProtection} does). Stateless and thread-safe.
 */
public final class StoredResponseCodec {

  private static final int MAGIC = 'I';
  private static final int VERSION = 1;

  private StoredResponseCodec() {}

  /**
   * @param response the response to encode, never {@code null}
   * @return a new byte array, never {@code null}
   * @throws NullPointerException if {@code response} is {@code null}
   * @throws IllegalArgumentException if the response has more than 65,535 header values
   * @throws UncheckedIOException if a header name or value takes more than 65,535 bytes in
   *     modified UTF-8 (a {@link java.io.UTFDataFormatException} as its cause)
   */
  public static byte[] encode(StoredResponse response) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(16 + response.bodyLength());
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(MAGIC);
      out.writeByte(VERSION);
      out.writeShort(response.status());
      int count = 0;
      for (List<String> values : response.headers().values()) {
        count += values.size();
      }
      if (count > 0xFFFF) {
        throw new IllegalArgumentException("too many header values: " + count);
      }
      out.writeShort(count);
      for (Map.Entry<String, List<String>> e : response.headers().entrySet()) {
        for (String value : e.getValue()) {
          out.writeUTF(e.getKey());
          out.writeUTF(value);
        }
      }
      out.writeInt(response.bodyLength());
      out.write(response.body());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /**
   * @param encoded bytes produced by {@link #encode(StoredResponse)}, never {@code null}; not
   *     modified
   * @return the response, never {@code null}
   * @throws NullPointerException if {@code encoded} is {@code null}
   * @throws IdemStoreException if the bytes are not a stored response of a known version (a
   *     corrupt record is a store failure, never silently an empty response)
   */
  public static StoredResponse decode(byte[] encoded) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(encoded))) {
      int magic = in.readUnsignedByte();
      int version = in.readUnsignedByte();
      if (magic != MAGIC || version != VERSION) {
        throw new IdemStoreException(
            "stored response has an unknown format (magic " + magic + ", version " + version + ")", null);
      }
      StoredResponse.Builder builder = StoredResponse.builder(in.readUnsignedShort());
      int count = in.readUnsignedShort();
      for (int i = 0; i < count; i++) {
        builder.header(in.readUTF(), in.readUTF());
      }
      int length = in.readInt();
      if (length < 0 || length > encoded.length) {
        throw new IdemStoreException("stored response is corrupt: body length " + length, null);
      }
      byte[] body = in.readNBytes(length);
      if (body.length != length || in.read() != -1) {
        throw new IdemStoreException("stored response is corrupt: body is truncated or has trailing bytes", null);
      }
      return builder.body(body).build();
    } catch (IOException | IllegalArgumentException e) {
      throw new IdemStoreException("stored response is corrupt: " + e.getMessage(), e);
    }
  }
}
