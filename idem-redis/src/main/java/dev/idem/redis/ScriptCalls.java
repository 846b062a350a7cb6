package dev.idem.redis;

import dev.idem.core.IdemStoreException;
import dev.idem.redis.RedisStoreClient.Acknowledged;
import dev.idem.redis.RedisStoreClient.Script;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Runs the stores' scripts on their client: as they are, or followed by {@code WAIT} / {@code
 * WAITAOF} when the store's {@link RedisDurability} asks for replicas. One code path for the
 * blocking store (whose client's stages are complete at once) and the non-blocking one.
 * Thread-safe as the client is.
 */
final class ScriptCalls {

  private final AsyncRedisStoreClient redis;
  private final RedisDurability durability;

  ScriptCalls(AsyncRedisStoreClient redis, RedisDurability durability) {
    this.redis = redis;
    this.durability = durability;
  }

  /**
   * Runs {@code script} on the record's key; with a durability, waits for its replicas ({@link #runDurably}).
   *
   * @return a stage with the script's reply; failed with {@link IdemStoreException} if Redis
   *     fails, or the write was not acknowledged as the durability asks
   */
  CompletionStage<@Nullable Object> run(Script script, String recordKey, byte[]... args) {
    List<byte[]> keys = List.of(LuaScripts.utf8(recordKey));
    List<byte[]> argv = List.of(args);
    if (!durability.isNone() && script != LuaScripts.PURGE) {
      return runDurably(script, recordKey, keys, argv);
    }
    return Stages.mapFailure(Stages.call(() -> redis.eval(script, keys, argv)), failure -> failed(script, recordKey, failure));
  }

  /** @return the failure as the store reports it: an {@link IdemStoreException} naming the script and the record */
  static IdemStoreException failed(Script script, String recordKey, Throwable failure) {
    if (failure instanceof IdemStoreException e) {
      return e;
    }
    return new IdemStoreException("Redis " + script.name() + " failed on " + recordKey + ": " + failure.getMessage(), failure);
  }

  /**
   * Runs a script and then {@code WAIT} (or {@code WAITAOF}) on the same connection ({@link
   * AsyncRedisStoreClient#evalAndWait}).
   *
   * @return a stage with the script's reply (null for a nil reply, which no script of Idem's
   *     gives), once {@link RedisDurability#replicas()} replicas acknowledged it; failed with
   *     {@link IdemStoreException} if the script failed, or its write was not acknowledged in time
   *     (an unknown outcome: the write may or may not survive a failover)
   */
  private CompletionStage<@Nullable Object> runDurably(Script script, String recordKey, List<byte[]> keys, List<byte[]> argv) {
    CompletableFuture<@Nullable Object> result = new CompletableFuture<>();
    Stages.call(() -> redis.evalAndWait(script, keys, argv, durability)).whenComplete((a, failure) -> {
      if (failure == null) {
        try {
          result.complete(acknowledged(script, recordKey, a));
        } catch (RuntimeException e) {
          result.completeExceptionally(e);
        }
        return;
      }
      Throwable cause = Stages.unwrap(failure);
      IdemStoreException unknown = new IdemStoreException("Redis " + script.name() + " failed on " + recordKey
          + " (durability " + durability + "); the outcome is unknown: " + describe(cause), cause);
      Stages.call(() -> redis.refreshRoute(keys.get(0))).whenComplete((ignored, refreshFailure) -> result.completeExceptionally(unknown));
    });
    return result;
  }

  private @Nullable Object acknowledged(Script script, String recordKey, Acknowledged a) {
    RuntimeException scriptFailure = a.scriptFailure();
    if (scriptFailure != null) { // an error of the script itself (IDEMCORRUPT, ...): no write
      throw new IdemStoreException("Redis " + script.name() + " failed on " + recordKey + ": " + scriptFailure.getMessage(), scriptFailure);
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

  private static @Nullable String describe(Throwable e) {
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
