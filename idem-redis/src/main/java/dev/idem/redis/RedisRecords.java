package dev.idem.redis;

import static dev.idem.redis.LuaScripts.utf8;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.StoredResponseCodec;
import dev.idem.redis.RedisStoreClient.Script;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Every rule of the Redis lease store, once, for the blocking {@link RedisLeaseStore} and the
 * non-blocking {@link AsyncRedisLeaseStore}: the record's key and layout, the validation of the
 * arguments, the scripts' arguments and the decoding of their replies, response protection and
 * durability. Each operation validates its arguments at once (throwing) and answers with a stage
 * of its client ({@link BlockingStoreClient}'s are complete when they are returned, so the
 * blocking store runs on its caller's thread; a non-blocking client's complete on its I/O thread,
 * where the next step runs, without blocking). So a record written by one store is read by the
 * other. Thread-safe as the client is.
 */
final class RedisRecords {

  private static final int MAX_OWNER_TOKEN_LENGTH = 64;
  private static final int MAX_PURGE_BATCH = 100_000;

  private final AsyncRedisStoreClient redis;
  private final String keyPrefix;
  private final String scanPattern;
  private final ResponseProtection protection;
  private final RedisDurability durability;
  /** Runs the scripts, waiting for replicas as the durability asks. */
  private final ScriptCalls calls;

  RedisRecords(AsyncRedisStoreClient redis, String keyPrefix, ResponseProtection protection, RedisDurability durability) {
    // the scripts are read from the class path, and SHA-256 looked up, when the store is built, not on
    // the first request: that may run on an event loop, where reading a file blocks it
    Objects.requireNonNull(LuaScripts.CLAIM, "the Lua scripts");
    LuaScripts.digest("SHA-256");
    this.redis = redis;
    this.keyPrefix = keyPrefix;
    this.protection = protection;
    this.durability = durability;
    this.calls = new ScriptCalls(redis, durability);
    this.scanPattern = escapeGlob(keyPrefix) + "{" + "?".repeat(64) + "}";
  }

  String keyPrefix() {
    return keyPrefix;
  }

  RedisDurability durability() {
    return durability;
  }

  /** {@link RedisLeaseStore#recordKey}. */
  String recordKey(Scope scope, IdempotencyKey key) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    String id = scope.principal() + '\u0000' + scope.operation() + '\u0000' + key.value();
    return keyPrefix + '{' + HexFormat.of().formatHex(LuaScripts.digest("SHA-256").digest(id.getBytes(StandardCharsets.UTF_8))) + '}';
  }

  /** {@link RedisLeaseStore#claim}: validates at once, then one script. */
  CompletionStage<ClaimResult> claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    Objects.requireNonNull(request, "request");
    checkOwnerToken(ownerToken);
    checkDuration("lease", lease);
    checkDuration("retention", retention);
    if (retention.compareTo(lease) <= 0) {
      throw new IllegalArgumentException("retention (" + retention + ") must be longer than the lease (" + lease + ")");
    }
    String recordKey = recordKey(request.scope(), request.key());
    return calls.run(LuaScripts.CLAIM, recordKey,
        utf8(request.scope().principal()),
        utf8(request.scope().operation()),
        utf8(request.key().value()),
        utf8(request.fingerprint().hex()),
        utf8(ownerToken),
        utf8(Long.toString(lease.toMillis())),
        utf8(Long.toString(retention.toMillis())),
        utf8(durability.isNone() ? "0" : "1"))
        .thenApply(reply -> toClaimResult(reply, recordKey, request));
  }

  /** {@link RedisLeaseStore#complete}: validates at once, then (protected) one read, then one script. */
  CompletionStage<Boolean> complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    Objects.requireNonNull(response, "response");
    checkOwnerToken(ownerToken);
    checkDuration("retention", retention);
    String recordKey = recordKey(scope, key);
    if (!protection.enabled()) {
      return completeScript(recordKey, ownerToken, StoredResponseCodec.encode(response), retention);
    }
    return read(recordKey, "owner", "fingerprint", "response").thenCompose(record -> {
      byte[] owner = record.get(0);
      byte[] fingerprintHex = record.get(1);
      if (owner == null || fingerprintHex == null || !ownerToken.equals(new String(owner, StandardCharsets.UTF_8))) {
        return CompletableFuture.completedFuture(false); // gone, expired, or another owner's
      }
      Fingerprint fingerprint = fingerprintOf(fingerprintHex, recordKey);
      byte[] stored = record.get(2);
      if (stored != null) {
        return CompletableFuture.completedFuture(openStored(stored, recordKey, scope, key, fingerprint).equals(response));
      }
      return completeScript(recordKey, ownerToken, protection.seal(scope, key, fingerprint, response), retention);
    });
  }

  private CompletionStage<Boolean> completeScript(String recordKey, String ownerToken, byte[] stored, Duration retention) {
    return calls.run(LuaScripts.COMPLETE, recordKey, utf8(ownerToken), stored, utf8(Long.toString(retention.toMillis())))
        .thenApply(reply -> toCount(reply, LuaScripts.COMPLETE, recordKey) == 1);
  }

  private CompletionStage<List<byte @Nullable []>> read(String recordKey, String... fields) {
    List<byte[]> names = new ArrayList<>(fields.length);
    for (String field : fields) {
      names.add(utf8(field));
    }
    CompletionStage<List<byte @Nullable []>> values = Stages.mapFailure(Stages.call(() -> redis.hmget(utf8(recordKey), names)),
        e -> e instanceof IdemStoreException s ? s : new IdemStoreException("Redis read of " + recordKey + " failed: " + e.getMessage(), e));
    return values.thenApply(v -> {
      if (v == null || v.size() != fields.length) {
        throw new IdemStoreException("Redis HMGET on " + recordKey + " gave an unexpected reply", null);
      }
      return v;
    });
  }

  /** {@link RedisLeaseStore#release}: validates at once, then one script. */
  CompletionStage<Boolean> release(Scope scope, IdempotencyKey key, String ownerToken) {
    checkOwnerToken(ownerToken);
    String recordKey = recordKey(scope, key);
    return calls.run(LuaScripts.RELEASE, recordKey, utf8(ownerToken))
        .thenApply(reply -> toCount(reply, LuaScripts.RELEASE, recordKey) == 1);
  }

  /** {@link RedisLeaseStore#status}: one read-only script, which waits for no replica. */
  CompletionStage<KeyStatus> status(Scope scope, IdempotencyKey key) {
    String recordKey = recordKey(scope, key);
    return Stages.mapFailure(Stages.call(() -> redis.eval(LuaScripts.STATUS, List.of(utf8(recordKey)), List.of())),
            e -> ScriptCalls.failed(LuaScripts.STATUS, recordKey, e))
        .thenApply(reply -> toStatus(reply, recordKey, scope, key));
  }

  private KeyStatus toStatus(@Nullable Object reply, String recordKey, Scope scope, IdempotencyKey key) {
    if (!(reply instanceof List<?> list) || list.isEmpty() || !(list.get(0) instanceof byte[] state)) {
      throw unexpected(LuaScripts.STATUS, recordKey, reply);
    }
    String stateName = new String(state, StandardCharsets.US_ASCII);
    if (stateName.equals("ABSENT") && list.size() == 1) {
      return KeyStatus.absent();
    }
    if (list.size() != 7) {
      throw unexpected(LuaScripts.STATUS, recordKey, reply);
    }
    byte[][] fields = new byte[6][];
    for (int i = 0; i < 6; i++) {
      if (!(list.get(i + 1) instanceof byte[] field)) {
        throw unexpected(LuaScripts.STATUS, recordKey, reply);
      }
      fields[i] = field;
    }
    Fingerprint fingerprint = fingerprintOf(fields[0], recordKey);
    // fields: fingerprint, lease_until, completed_at, expires_at, now, response
    long expiresAt = millis(fields[3], recordKey);
    long now = millis(fields[4], recordKey);
    if (stateName.equals("COMPLETED")) {
      int status = openStored(fields[5], recordKey, scope, key, fingerprint).status();
      Instant completedAt = fields[2].length == 0 ? null : Instant.ofEpochMilli(millis(fields[2], recordKey));
      return new KeyStatus.Completed(fingerprint, status, completedAt, Instant.ofEpochMilli(expiresAt));
    }
    if (stateName.equals("IN_PROGRESS")) {
      long leaseUntil = millis(fields[1], recordKey);
      return new KeyStatus.InProgress(fingerprint, Instant.ofEpochMilli(leaseUntil), Duration.ofMillis(Math.max(0, leaseUntil - now)),
          null, Instant.ofEpochMilli(expiresAt));
    }
    throw unexpected(LuaScripts.STATUS, recordKey, reply);
  }

  /** {@link RedisLeaseStore#purgeExpired}: validates at once, then the client's walk, one script per key found. */
  CompletionStage<Long> purgeExpired(int batchSize) {
    if (batchSize < 1 || batchSize > MAX_PURGE_BATCH) {
      throw new IllegalArgumentException("batchSize must be between 1 and 100000, was " + batchSize);
    }
    return Stages.mapFailure(
        Stages.call(() -> redis.scan(scanPattern, batchSize,
            found -> calls.run(LuaScripts.PURGE, found).thenApply(reply -> toCount(reply, LuaScripts.PURGE, found)))),
        e -> e instanceof IdemStoreException s ? s
            : new IdemStoreException("Redis purge failed while scanning " + scanPattern + ": " + e.getMessage(), e));
  }

  private ClaimResult toClaimResult(@Nullable Object reply, String recordKey, IdempotentRequest request) {
    if (!(reply instanceof List<?> list) || list.size() != 3 || !(list.get(0) instanceof byte[] state)
        || !(list.get(1) instanceof byte[] fingerprintHex)) {
      throw unexpected(LuaScripts.CLAIM, recordKey, reply);
    }
    Fingerprint fingerprint = fingerprintOf(fingerprintHex, recordKey);
    Object extra = list.get(2);
    switch (new String(state, StandardCharsets.US_ASCII)) {
      case "CLAIMED":
        if (extra instanceof Long recovery) {
          return ClaimResult.claimed(fingerprint, recovery == 1L);
        }
        break;
      case "IN_PROGRESS":
        if (extra instanceof Long remainingMillis) {
          return ClaimResult.inProgress(fingerprint, Duration.ofMillis(remainingMillis));
        }
        break;
      case "COMPLETED":
        if (extra instanceof byte[] encoded) {
          return ClaimResult.completed(fingerprint, openStored(encoded, recordKey, request.scope(), request.key(), fingerprint));
        }
        break;
      default:
        break;
    }
    throw unexpected(LuaScripts.CLAIM, recordKey, reply);
  }

  private static long millis(byte[] digits, String recordKey) {
    try {
      return Long.parseLong(new String(digits, StandardCharsets.US_ASCII));
    } catch (NumberFormatException e) {
      throw new IdemStoreException("the Redis record " + recordKey + " holds a corrupt time", e);
    }
  }

  private static Fingerprint fingerprintOf(byte[] hex, String recordKey) {
    try {
      return Fingerprint.fromHex(new String(hex, StandardCharsets.US_ASCII));
    } catch (IllegalArgumentException e) {
      throw new IdemStoreException("the Redis record " + recordKey + " holds a corrupt fingerprint: " + e.getMessage(), e);
    }
  }

  /** @throws StoredResponseUnreadableException naming the record's Redis key (a digest, not the scope) */
  private StoredResponse openStored(byte[] stored, String recordKey, Scope scope, IdempotencyKey key, Fingerprint fingerprint) {
    try {
      return protection.open(scope, key, fingerprint, stored);
    } catch (StoredResponseUnreadableException e) {
      throw new StoredResponseUnreadableException("the Redis record " + recordKey + " holds an unreadable response: " + e.getMessage(), e);
    }
  }

  private static long toCount(@Nullable Object reply, Script script, String recordKey) {
    if (reply instanceof Long n && (n == 0L || n == 1L)) {
      return n;
    }
    throw unexpected(script, recordKey, reply);
  }

  private static IdemStoreException unexpected(Script script, String recordKey, @Nullable Object reply) {
    String shape = reply == null ? "null" : reply.getClass().getSimpleName();
    return new IdemStoreException("Redis " + script.name() + " on " + recordKey + " gave an unexpected reply (" + shape + ")", null);
  }

  // ------------------------------------------------------------------ validation and helpers

  /**
   * The rule of {@link RedisLeaseStore.Builder#keyPrefix}.
   *
   * @return {@code keyPrefix}
   */
  static String checkKeyPrefix(String keyPrefix) {
    Objects.requireNonNull(keyPrefix, "keyPrefix");
    if (keyPrefix.isEmpty() || keyPrefix.length() > RedisLeaseStore.MAX_KEY_PREFIX_LENGTH) {
      throw new IllegalArgumentException(
          "keyPrefix must be 1 to " + RedisLeaseStore.MAX_KEY_PREFIX_LENGTH + " characters, was " + keyPrefix.length());
    }
    for (int i = 0; i < keyPrefix.length(); i++) {
      char c = keyPrefix.charAt(i);
      if (Character.isISOControl(c) || c == '{' || c == '}') {
        throw new IllegalArgumentException(
            "keyPrefix must not contain a control character, '{' or '}': found one at index " + i);
      }
    }
    return keyPrefix;
  }

  private static void checkOwnerToken(String ownerToken) {
    Objects.requireNonNull(ownerToken, "ownerToken");
    if (ownerToken.isEmpty() || ownerToken.length() > MAX_OWNER_TOKEN_LENGTH) {
      throw new IllegalArgumentException("ownerToken must be 1 to 64 characters, was " + ownerToken.length());
    }
    for (int i = 0; i < ownerToken.length(); i++) {
      char c = ownerToken.charAt(i);
      if (c < 0x20 || c > 0x7E) {
        throw new IllegalArgumentException("ownerToken must be printable US-ASCII, not at index " + i);
      }
    }
  }

  private static void checkDuration(String name, Duration d) {
    Objects.requireNonNull(d, name);
    if (d.isNegative() || d.isZero() || d.compareTo(RedisLeaseStore.MAX_DURATION) > 0) {
      throw new IllegalArgumentException(name + " must be positive and at most " + RedisLeaseStore.MAX_DURATION + ", was " + d);
    }
  }

  /** Escapes the characters that Redis's glob patterns treat specially. */
  private static String escapeGlob(String s) {
    StringBuilder b = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
        b.append('\\');
      }
      b.append(c);
    }
    return b.toString();
  }
}
