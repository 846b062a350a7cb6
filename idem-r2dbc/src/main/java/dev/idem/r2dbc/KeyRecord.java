package dev.idem.r2dbc;

import io.r2dbc.spi.Row;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * One row of the key table as the read statement returns it: the columns of {@code
 * KeyTableSql#read} ({@code fingerprint, owner_token, lease_until, response, expires_at}) and the
 * database's time, in that order; the same reading as idem-jdbc's, over R2DBC. Immutable.
 *
 * @param fingerprint the recorded request's fingerprint, 64 hexadecimal digits
 * @param owner the owner token of a lease-mode claim, or {@code null}
 * @param leaseUntil when the lease runs out, ms since the epoch on the database's clock; 0 without a lease
 * @param response the stored response (sealed when protected), or {@code null} before completion
 * @param expiresAt when the record expires, ms since the epoch on the database's clock
 * @param now the database's time at the read, ms since the epoch
 */
record KeyRecord(String fingerprint, @Nullable String owner, long leaseUntil, byte @Nullable [] response, long expiresAt,
    long now) {

  /** Reads the row; binary and character columns alike (MySQL's are VARBINARY). */
  static KeyRecord of(Row row) {
    String fingerprint = text(row.get(0));
    if (fingerprint == null) {
      throw new IllegalStateException("a key table row without a fingerprint");
    }
    Number leaseUntil = number(row.get(2));
    Number expiresAt = number(row.get(4));
    Number now = number(row.get(5));
    if (expiresAt == null || now == null) {
      throw new IllegalStateException("a key table row without its expiry, or a read without the database's time");
    }
    return new KeyRecord(fingerprint, text(row.get(1)), leaseUntil == null ? 0 : leaseUntil.longValue(),
        row.get(3, byte[].class), expiresAt.longValue(), now.longValue());
  }

  /** @return whether the record has not expired at the time of the read ({@code now < expiresAt}) */
  boolean live() {
    return now < expiresAt;
  }

  /**
   * @return whether this is a transactional claim that no transaction holds any more: no response
   *     and no lease ({@code state = 'IN_PROGRESS' AND lease_until IS NULL} committed, which a
   *     broken transaction can leave); such a record may be claimed again
   */
  boolean orphaned() {
    return response == null && leaseUntil == 0;
  }

  /** @return what is left of the lease at the time of the read, in ms, never negative */
  long leaseRemainingMillis() {
    return Math.max(0, leaseUntil - now);
  }

  private static @Nullable String text(@Nullable Object value) {
    if (value == null || value instanceof String) {
      return (String) value;
    }
    if (value instanceof byte[] bytes) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
    if (value instanceof ByteBuffer buffer) {
      return StandardCharsets.UTF_8.decode(buffer.duplicate()).toString();
    }
    return value.toString();
  }

  private static @Nullable Number number(@Nullable Object value) {
    if (value == null || value instanceof Number) {
      return (Number) value;
    }
    return Long.parseLong(value.toString());
  }
}
