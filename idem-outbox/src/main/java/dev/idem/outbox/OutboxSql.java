package dev.idem.outbox;

import dev.idem.jdbc.Dialect;
import org.jspecify.annotations.Nullable;

/**
 * The outbox table's SQL for one dialect and one table name, made once per dialect by {@link
 * Outbox}; used by {@link Outbox}, {@link IntentWriter} and {@link OutboxRelay}. Immutable;
 * thread-safe.
 */
final class OutboxSql {

  /** The columns every read of an intent selects, in the order {@link Outbox} reads them. */
  static final String COLUMNS =
      "id, principal, operation, idem_key, intent_no, kind, target, route, headers, body, state, attempts,"
          + " last_error, created_at";

  final String insert;
  final @Nullable String claimReturning;
  final String dueSelect;
  final String leaseByIds;
  final String markSent;
  final String markFailed;
  final String byId;
  final String byOperation;
  final String dead;
  final String retry;
  final String counts;
  final String purge;

  OutboxSql(Dialect dialect, String t) {
    String now = dialect.nowMillis();
    this.insert =
        "INSERT INTO " + t + " (id, principal, operation, idem_key, intent_no, kind, target, route, headers, body,"
            + " state, attempts, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', 0, "
            + now + ", " + now + ")";
    String due = " WHERE state = 'PENDING' AND next_attempt_at <= " + now + " AND kind IN (#KINDS#)"
        + " ORDER BY next_attempt_at LIMIT ?";
    String lease = "UPDATE " + t + " SET lease_owner = ?, next_attempt_at = " + now + " + ?, attempts = attempts + 1";
    // #LOCK#: the dialect's lockSkippingLocked, which may depend on the server's version
    this.claimReturning = !dialect.supportsReturning() ? null
        : lease + " WHERE id IN (SELECT id FROM " + t + due + "#LOCK#) RETURNING " + COLUMNS;
    this.dueSelect = "SELECT " + COLUMNS + " FROM " + t + due;
    this.leaseByIds = lease + " WHERE id IN";
    this.markSent =
        "UPDATE " + t + " SET state = 'SENT', sent_at = " + now + ", lease_owner = NULL, last_error = NULL"
            + " WHERE id = ? AND lease_owner = ? AND state = 'PENDING'";
    this.markFailed =
        "UPDATE " + t + " SET state = ?, next_attempt_at = " + now + " + ?, lease_owner = NULL, last_error = ?"
            + " WHERE id = ? AND lease_owner = ? AND state = 'PENDING'";
    this.byId = "SELECT " + COLUMNS + " FROM " + t + " WHERE id = ?";
    this.byOperation =
        "SELECT " + COLUMNS + " FROM " + t + " WHERE principal = ? AND operation = ? AND idem_key = ? ORDER BY intent_no";
    this.dead = "SELECT " + COLUMNS + " FROM " + t + " WHERE state = 'DEAD' ORDER BY created_at, id LIMIT ?";
    this.retry =
        "UPDATE " + t + " SET state = 'PENDING', attempts = 0, next_attempt_at = " + now + ", lease_owner = NULL"
            + " WHERE id = ? AND state = 'DEAD'";
    this.counts = "SELECT state, COUNT(*) FROM " + t + " GROUP BY state";
    this.purge = "DELETE FROM " + t + " WHERE state = 'SENT' AND sent_at < " + now + " - ?";
  }
}
