/**
 * The transactional outbox, API: {@link dev.idem.outbox.Outbox} records intents in the effect's
 * transaction, and {@link dev.idem.outbox.OutboxRelay} delivers them at least once, each with an
 * id ({@link dev.idem.outbox.IntentId}) receivers deduplicate by.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.outbox;

import org.jspecify.annotations.NullMarked;
