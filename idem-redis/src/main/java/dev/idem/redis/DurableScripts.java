package dev.idem.redis;

import dev.idem.core.IdemStoreException;
import java.util.List;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.exceptions.JedisRedirectionException;
import redis.clients.jedis.util.KeyValue;

/**
 * Runs a store script and then {@code WAIT} (or {@code WAITAOF}) in one pipeline, so both go over
 * the same connection: {@code WAIT} counts only the writes of its own connection. On Redis Cluster
 * the pipeline routes both by the record key, to the connection of the node that owns its slot.
 * Thread-safe: each call uses its own pipeline.
 */
final class DurableScripts {

  private final UnifiedJedis redis;
  private final RedisDurability durability;

  DurableScripts(UnifiedJedis redis, RedisDurability durability) {
    this.redis = redis;
    this.durability = durability;
  }

  /**
   * @return the script's reply, once {@link RedisDurability#replicas()} replicas acknowledged it
   * @throws IdemStoreException if the script failed, or its write was not acknowledged in time (an
   *     unknown outcome: the write may or may not survive a failover)
   */
  Object run(String name, byte[] sha1, byte[] source, String recordKey, List<byte[]> keys, List<byte[]> argv) {
    try {
      Attempt attempt = attempt(sha1, keys, argv, true);
      if (attempt.noScript) {
        attempt = attempt(source, keys, argv, false);
      }
      if (attempt.scriptFailure instanceof JedisRedirectionException redirection) {
        throw redirection; // MOVED or ASK: the script did not run on this node
      }
      if (attempt.scriptFailure != null) { // an error of the script itself (IDEMCORRUPT, ...): no write
        throw new IdemStoreException("Redis " + name + " failed on " + recordKey + ": "
            + attempt.scriptFailure.getMessage(), attempt.scriptFailure);
      }
      checkAcknowledged(name, recordKey, attempt);
      return attempt.reply;
    } catch (JedisException e) {
      refreshRoute(keys.get(0));
      throw new IdemStoreException("Redis " + name + " failed on " + recordKey + " (durability " + durability
          + "); the outcome is unknown: " + describe(e), e);
    }
  }

  private Attempt attempt(byte[] script, List<byte[]> keys, List<byte[]> argv, boolean bySha) {
    byte[] key = keys.get(0);
    long timeoutMillis = durability.timeout().toMillis();
    Response<Object> reply;
    Response<Long> replicas = null;
    Response<KeyValue<Long, Long>> aof = null;
    try (AbstractPipeline pipeline = redis.pipelined()) {
      reply = bySha ? pipeline.evalsha(script, keys, argv) : pipeline.eval(script, keys, argv);
      if (durability.aof()) {
        aof = pipeline.waitAOF(key, 1, durability.replicas(), timeoutMillis);
      } else {
        replicas = pipeline.waitReplicas(key, durability.replicas(), timeoutMillis);
      }
      pipeline.sync();
    }
    Attempt a = new Attempt();
    try {
      a.reply = reply.get();
    } catch (JedisNoScriptException e) {
      a.noScript = true;
      return a;
    } catch (JedisDataException e) {
      if (bySha && e.getMessage() != null && e.getMessage().startsWith("NOSCRIPT")) {
        a.noScript = true;
        return a;
      }
      a.scriptFailure = e;
    }
    if (aof != null) {
      KeyValue<Long, Long> counts = aof.get();
      a.local = counts.getKey();
      a.acknowledged = counts.getValue();
    } else {
      a.acknowledged = replicas.get();
    }
    return a;
  }

  private void checkAcknowledged(String name, String recordKey, Attempt a) {
    boolean enough = a.acknowledged >= durability.replicas() && (!durability.aof() || a.local >= 1);
    if (!enough) {
      String what = durability.aof()
          ? "fsynced by " + (a.local >= 1 ? "the master and " : "not the master but ") + a.acknowledged + " of "
              + durability.replicas() + " replicas"
          : "acknowledged by " + a.acknowledged + " of " + durability.replicas() + " replicas";
      throw new IdemStoreException("Redis " + name + " on " + recordKey + " was " + what + " within "
          + durability.timeout().toMillis() + " ms; the outcome is unknown (a failover may lose it),"
          + " repeat it with the same owner token", null);
    }
  }

  /**
   * A pipeline does not follow {@code MOVED} nor refresh a cluster client's slot map when a node
   * died; one keyed read through the client's own executor does both, so the next try goes to the
   * node that owns the slot now. Its own failure changes nothing.
   */
  private void refreshRoute(byte[] key) {
    try {
      redis.exists(key);
    } catch (RuntimeException ignored) {
      // the caller reports the original failure
    }
  }

  private static String describe(JedisException e) {
    String message = e.getMessage();
    if (message != null && message.contains("unknown command") && message.toUpperCase().contains("WAITAOF")) {
      return message + " (WAITAOF needs Redis 7.2 or later; use RedisDurability.replicas on this server)";
    }
    return message;
  }

  private static final class Attempt {
    Object reply;
    JedisDataException scriptFailure;
    boolean noScript;
    Long acknowledged;
    long local;
  }
}
