package dev.idem.redis;

import dev.idem.core.IdemStoreException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.ToLongFunction;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObjects;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.ScanIteration;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.exceptions.JedisRedirectionException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;
import redis.clients.jedis.util.KeyValue;
import org.jspecify.annotations.Nullable;

/**
 * The store's commands on a Jedis {@link UnifiedJedis} ({@link RedisLeaseStore#builder(UnifiedJedis)}).
 * A script with {@code WAIT} (or {@code WAITAOF}) runs in one pipeline, so both go over the same
 * connection: {@code WAIT} counts only the writes of its own connection. On Redis Cluster the
 * pipeline routes both by the record key, to the connection of the node that owns its slot.
 * Thread-safe when the client is: each call uses its own pipeline.
 */
final class JedisStoreClient implements RedisStoreClient {

  private static final CommandObjects COMMANDS = new CommandObjects();

  private final UnifiedJedis redis;

  JedisStoreClient(UnifiedJedis redis) {
    this.redis = redis;
  }

  @Override
  public @Nullable Object eval(Script script, List<byte[]> keys, List<byte[]> args) {
    try {
      return redis.evalsha(script.sha1(), keys, args);
    } catch (JedisNoScriptException e) {
      return redis.eval(script.source(), keys, args);
    } catch (JedisDataException e) {
      if (e.getMessage() == null || !e.getMessage().startsWith("NOSCRIPT")) {
        throw e;
      }
      return redis.eval(script.source(), keys, args);
    }
  }

  @Override
  public Acknowledged evalAndWait(Script script, List<byte[]> keys, List<byte[]> args, RedisDurability durability) {
    Attempt attempt = attempt(script.sha1(), keys, args, true, durability);
    if (attempt.noScript) {
      attempt = attempt(script.source(), keys, args, false, durability);
    }
    if (attempt.scriptFailure instanceof JedisRedirectionException redirection) {
      throw redirection; // MOVED or ASK: the script did not run on this node
    }
    if (attempt.scriptFailure != null) { // an error of the script itself (IDEMCORRUPT, ...): no write
      return Acknowledged.scriptFailed(attempt.scriptFailure);
    }
    return Acknowledged.of(attempt.reply, attempt.local, attempt.acknowledged);
  }

  private Attempt attempt(byte[] script, List<byte[]> keys, List<byte[]> argv, boolean bySha, RedisDurability durability) {
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
      a.acknowledged = Objects.requireNonNull(replicas, "WAIT is sent when WAITAOF is not").get();
    }
    return a;
  }

  @Override
  public List<byte[]> hmget(byte[] key, List<byte[]> fields) {
    return redis.hmget(key, fields.toArray(new byte[0][]));
  }

  /**
   * A pipeline does not follow {@code MOVED} nor refresh a cluster client's slot map when a node
   * died; one keyed read through the client's own executor does both, so the next try goes to the
   * node that owns the slot now. Its own failure changes nothing.
   */
  @Override
  public void refreshRoute(byte[] key) {
    try {
      redis.exists(key);
    } catch (RuntimeException ignored) {
      // the caller reports the original failure
    }
  }

  @Override
  public long scan(String pattern, int batchSize, ToLongFunction<String> action) {
    Map<String, ConnectionPool> clusterNodes = clusterNodes(redis);
    if (clusterNodes != null) {
      return scanClusterMasters(clusterNodes, pattern, batchSize, action);
    }
    long removed = 0;
    try {
      ScanIteration scan = redis.scanIteration(batchSize, pattern);
      while (!scan.isIterationCompleted()) {
        for (String found : scan.nextBatchList()) {
          removed += action.applyAsLong(found);
        }
      }
    } catch (JedisException e) {
      throw new IdemStoreException("Redis purge failed while scanning " + pattern + ": " + e.getMessage(), e);
    }
    return removed;
  }

  /** @return the cluster client's nodes ("host:port" to pool), or null for a client of one server */
  private static @Nullable Map<String, ConnectionPool> clusterNodes(UnifiedJedis redis) {
    if (redis instanceof RedisClusterClient c) {
      return c.getClusterNodes();
    }
    if (redis instanceof JedisCluster c) {
      return c.getClusterNodes();
    }
    return null;
  }

  /**
   * Scans every master (a replica holds copies only, and its keys cannot be deleted there); a
   * node that cannot be reached is skipped. If a skipped node still owns slots as a master (per
   * {@code CLUSTER NODES} of a reachable master), the sweep was partial: the records deleted stay
   * deleted, and {@link IdemStoreException} names the masters not swept and the count.
   */
  private static long scanClusterMasters(Map<String, ConnectionPool> nodes, String pattern, int batchSize,
      ToLongFunction<String> action) {
    long removed = 0;
    List<String> unreachable = new ArrayList<>();
    String topology = null;
    for (Map.Entry<String, ConnectionPool> node : nodes.entrySet()) {
      try (Connection c = node.getValue().getResource()) {
        Object role = c.executeCommand(Protocol.Command.ROLE);
        if (!(role instanceof List<?> r) || r.isEmpty() || !(r.get(0) instanceof byte[] name)
            || !"master".equals(new String(name, StandardCharsets.US_ASCII))) {
          continue;
        }
        if (topology == null) {
          Object text = c.executeCommand(new CommandArguments(Protocol.Command.CLUSTER).add("NODES"));
          topology = text instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(text);
        }
        String cursor = ScanParams.SCAN_POINTER_START;
        ScanParams params = new ScanParams().match(pattern).count(batchSize);
        do {
          ScanResult<String> page = c.executeCommand(COMMANDS.scan(cursor, params));
          for (String found : page.getResult()) {
            removed += action.applyAsLong(found);
          }
          cursor = page.getCursor();
        } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
      } catch (JedisConnectionException e) {
        unreachable.add(node.getKey());
      } catch (JedisException e) {
        throw new IdemStoreException("Redis purge failed on " + node.getKey() + " after deleting " + removed
            + " records: " + e.getMessage(), e);
      }
    }
    List<String> missed = new ArrayList<>();
    for (String hostPort : unreachable) {
      if (topology == null || ownsSlots(topology, hostPort)) {
        missed.add(hostPort);
      }
    }
    if (!missed.isEmpty()) {
      throw new IdemStoreException("Redis purge was partial: deleted " + removed + " records, but the masters "
          + missed + " could not be reached; their expired records are left (Redis still expires them by itself)", null);
    }
    return removed;
  }

  /** True if CLUSTER NODES lists {@code host:port} as a master with at least one slot range. */
  private static boolean ownsSlots(String clusterNodes, String hostPort) {
    for (String line : clusterNodes.split("\n")) {
      String[] f = line.trim().split(" ");
      if (f.length > 8 && f[1].startsWith(hostPort + "@") && f[2].contains("master")) {
        return true;
      }
    }
    return false;
  }

  private static final class Attempt {
    @Nullable Object reply;
    @Nullable JedisDataException scriptFailure;
    boolean noScript;
    long acknowledged;
    long local;
  }
}
