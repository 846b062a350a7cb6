package dev.idem.redis;

import dev.idem.core.IdemStoreException;
import dev.idem.redis.RedisStoreClient.Script;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Runs {@link RedisLeaseStore}'s scripts on its client: as they are, or followed by {@code WAIT}
 * / {@code WAITAOF} when the store's {@link RedisDurability} asks for replicas. Thread-safe as the
 * client is.
 */
final class ScriptCalls {

  private final RedisStoreClient redis;
  private final RedisDurability durability;

  ScriptCalls(RedisStoreClient redis, RedisDurability durability) {
    this.redis = redis;
    this.durability = durability;
  }

  /**
   * Runs {@code script} on the record's key; with a durability, waits for its replicas ({@link #runDurably}).
   *
   * @return the script's reply
   * @throws IdemStoreException if Redis fails, or the write was not acknowledged as the durability asks
   */
  @Nullable Object run(Script script, String recordKey, byte[]... args) {
    List<byte[]> keys = List.of(LuaScripts.utf8(recordKey));
    List<byte[]> argv = List.of(args);
    if (!durability.isNone() && script != LuaScripts.PURGE) {
      return runDurably(script, recordKey, keys, argv);
    }
    try {
      return redis.eval(script, keys, argv);
    } catch (IdemStoreException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new IdemStoreException("Redis " + script.name() + " failed on " + recordKey + ": " + e.getMessage(), e);
    }
  }

  /**
   * Runs a script and then {@code WAIT} (or {@code WAITAOF}) on the same connection ({@link
   * RedisStoreClient#evalAndWait}).
   *
   * @return the script's reply (null for a nil reply, which no script of Idem's gives), once {@link
   *     RedisDurability#replicas()} replicas acknowledged it
   * @throws IdemStoreException if the script failed, or its write was not acknowledged in time (an
   *     unknown outcome: the write may or may not survive a failover)
   */
  private @Nullable Object runDurably(Script script, String recordKey, List<byte[]> keys, List<byte[]> argv) {
    RedisStoreClient.Acknowledged a;
    try {
      a = redis.evalAndWait(script, keys, argv, durability);
    } catch (RuntimeException e) {
      redis.refreshRoute(keys.get(0));
      throw new IdemStoreException("Redis " + script.name() + " failed on " + recordKey + " (durability " + durability
          + "); the outcome is unknown: " + describe(e), e);
    }
    if (a.scriptFailure() != null) { // an error of the script itself (IDEMCORRUPT, ...): no write
      throw new IdemStoreException("Redis " + script.name() + " failed on " + recordKey + ": "
          + a.scriptFailure().getMessage(), a.scriptFailure());
    }
    boolean enough = a.replicas() >= durability.replicas() && (!durability.aof() || a.masterFsynced() >= 1);
    if (!enough) {
      String what = durability.aof()
          ? "fsynced by " + (a.masterFsynced() >= 1 ? "the master and " : "not the master but ") + a.replicas() + " of "
              + durability.replicas() + " replicas"
          : "acknowledged by " + a.replicas() + " of " + durability.replicas() + " replicas";
      throw new IdemStoreException("Redis " + script.name() + " on " + recordKey + " was " + what + " within "
          + durability.timeout().toMillis() + " ms; the outcome is unknown (a failover may lose it),"
          + " repeat it with the same owner token", null);
    }
    return a.reply();
  }

  private static @Nullable String describe(RuntimeException e) {
    String message = e.getMessage();
    for (Throwable t = e; t != null && message != null; t = t.getCause()) {
      String m = t.getMessage();
      if (m != null && m.contains("unknown command") && m.toUpperCase(java.util.Locale.ROOT).contains("WAITAOF")) {
        return message + " (WAITAOF needs Redis 7.2 or later; use RedisDurability.replicas on this server)";
      }
    }
    return message;
  }
}
