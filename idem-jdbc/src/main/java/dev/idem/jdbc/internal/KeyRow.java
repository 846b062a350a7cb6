package dev.idem.jdbc.internal;

import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * One row of the key table as {@link KeyTableSql#read} returns it, with the database's time of the
 * read. Immutable. Not public API.
 */
public final class KeyRow {
  /** The recorded fingerprint, 64 hexadecimal digits. */
  public final String fingerprint;
  /** The lease-mode owner token, or {@code null} (a transactional row). */
  public final String owner;
  /** Whether the row has a lease ({@code lease_until} not NULL). */
  public final boolean hasLease;
  /** The end of the lease, ms since the epoch; 0 without one. */
  public final long leaseUntil;
  /** The stored response, or {@code null} while in progress. */
  public final byte[] response;
  /** The expiry, ms since the epoch. */
  public final long expiresAt;
  /** The database's time of the read, ms since the epoch. */
  public final long now;

  private KeyRow(String fingerprint, String owner, boolean hasLease, long leaseUntil, byte[] response, long expiresAt, long now) {
    this.fingerprint = fingerprint;
    this.owner = owner;
    this.hasLease = hasLease;
    this.leaseUntil = leaseUntil;
    this.response = response;
    this.expiresAt = expiresAt;
    this.now = now;
  }

  /** Reads the columns {@link KeyTableSql#ROW_COLUMNS} and the time, in that order. */
  public static KeyRow read(ResultSet rs) throws SQLException {
    String fingerprint = rs.getString(1);
    String owner = rs.getString(2);
    long leaseUntil = rs.getLong(3);
    boolean hasLease = !rs.wasNull();
    byte[] response = rs.getBytes(4);
    return new KeyRow(fingerprint, owner, hasLease, leaseUntil, response, rs.getLong(5), rs.getLong(6));
  }

  /** @return whether the row has not expired at the time of the read ({@code now < expiresAt}) */
  public boolean live() {
    return now < expiresAt;
  }

  /** @return whether the row holds a stored response */
  public boolean completed() {
    return response != null;
  }

  /**
   * A committed claim without a response and without a lease can only be left by a transaction
   * that ended without Idem (an effect that committed on its own, then failed): transactional
   * claims are never visible before their commit, and lease-mode claims have a lease. Transactional
   * mode counts it as absent.
   */
  public boolean orphaned() {
    return response == null && !hasLease;
  }

  /** @return what is left of the lease at the time of the read, in ms, never negative */
  public long leaseRemainingMillis() {
    return Math.max(0, leaseUntil - now);
  }
}
