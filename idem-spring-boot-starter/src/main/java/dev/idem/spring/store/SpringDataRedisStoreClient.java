package dev.idem.spring.store;

import dev.idem.core.IdemStoreException;
import dev.idem.redis.RedisDurability;
import dev.idem.redis.RedisStoreClient;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToLongFunction;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisClusterNode;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisPipelineException;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.Cursor;
import org.springframework.data.redis.core.ScanOptions;

/**
 * The Redis store's commands over Spring Data Redis's {@link RedisConnectionFactory}: the one
 * Spring Boot configures from {@code spring.data.redis.*} (host, port, credentials, SSL, timeouts,
 * Sentinel, cluster nodes, pool), with Lettuce or Jedis. Each call borrows a connection from the
 * factory and returns it. Loaded only with spring-data-redis and idem-redis on the class path; it
 * never touches a client library's classes, so it works with whichever version of Lettuce or Jedis
 * Spring Data Redis runs on. Thread-safe.
 *
 * <p>{@link #evalAndWait} runs the script and {@code WAIT} in one pipeline, which Spring Data
 * Redis runs on a connection of its own (Lettuce's shared connection is not used for pipelines;
 * Jedis's connection is always its own), so {@code WAIT} counts the script's write. Spring Data
 * Redis has no pipelines on Redis Cluster and would send {@code WAIT} over another connection than
 * the script, so the durability waits are refused there (the starter stops the start-up first).
 */
final class SpringDataRedisStoreClient implements RedisStoreClient {

  private final RedisConnectionFactory factory;

  SpringDataRedisStoreClient(RedisConnectionFactory factory) {
    this.factory = factory;
  }

  @Override
  public Object eval(Script script, List<byte[]> keys, List<byte[]> args) {
    ReturnType type = script.returnsArray() ? ReturnType.MULTI : ReturnType.INTEGER;
    byte[][] keysAndArgs = keysAndArgs(keys, args);
    try (RedisConnection c = factory.getConnection()) {
      try {
        return c.scriptingCommands().evalSha(script.sha1(), type, keys.size(), keysAndArgs);
      } catch (RuntimeException e) {
        if (!noScript(e)) {
          throw e;
        }
        return c.scriptingCommands().eval(script.source(), type, keys.size(), keysAndArgs);
      }
    }
  }

  @Override
  public Acknowledged evalAndWait(Script script, List<byte[]> keys, List<byte[]> args, RedisDurability durability) {
    try (RedisConnection c = factory.getConnection()) {
      if (c instanceof RedisClusterConnection) {
        throw new IllegalStateException(CLUSTER_DURABILITY);
      }
      List<Object> results = pipeline(c, script.sha1(), true, script, keys, args, durability);
      if (results.get(0) instanceof Throwable t && noScript(t)) {
        results = pipeline(c, script.source(), false, script, keys, args, durability);
      }
      if (results.get(0) instanceof Throwable t) {
        if (!errorReply(t)) {
          throw asRuntime(t); // the connection broke: the script may have run
        }
        return Acknowledged.scriptFailed(asRuntime(t));
      }
      Object waited = results.get(1);
      if (waited instanceof Throwable t) {
        throw asRuntime(t);
      }
      if (durability.aof()) {
        if (!(waited instanceof List<?> counts) || counts.size() != 2
            || !(counts.get(0) instanceof Long local) || !(counts.get(1) instanceof Long replicas)) {
          throw new IdemStoreException("Redis WAITAOF gave an unexpected reply (" + describe(waited) + ")", null);
        }
        return Acknowledged.of(results.get(0), local, replicas);
      }
      if (!(waited instanceof Long replicas)) {
        throw new IdemStoreException("Redis WAIT gave an unexpected reply (" + describe(waited) + ")", null);
      }
      return Acknowledged.of(results.get(0), 0, replicas);
    }
  }

  /** The script and WAIT or WAITAOF in one pipeline: one connection; the results, failures as elements. */
  private static List<Object> pipeline(RedisConnection c, byte[] script, boolean bySha, Script s, List<byte[]> keys,
      List<byte[]> args, RedisDurability durability) {
    ReturnType type = s.returnsArray() ? ReturnType.MULTI : ReturnType.INTEGER;
    byte[][] keysAndArgs = keysAndArgs(keys, args);
    byte[] replicas = ascii(Integer.toString(durability.replicas()));
    byte[] timeout = ascii(Long.toString(durability.timeout().toMillis()));
    c.openPipeline();
    List<Object> results;
    try {
      if (bySha) {
        c.scriptingCommands().evalSha(script, type, keys.size(), keysAndArgs);
      } else {
        c.scriptingCommands().eval(script, type, keys.size(), keysAndArgs);
      }
      byte[][] waitArgs = durability.aof() ? new byte[][] {ascii("1"), replicas, timeout} : new byte[][] {replicas, timeout};
      String command = durability.aof() ? "WAITAOF" : "WAIT";
      if (LettuceWait.is(c)) {
        LettuceWait.execute(c, command, durability.aof(), waitArgs);
      } else {
        c.execute(command, waitArgs);
      }
    } finally {
      try {
        results = c.closePipeline();
      } catch (RedisPipelineException e) {
        results = e.getPipelineResult();
        if (results == null || results.size() != 2) {
          // Lettuce gives no results when a command failed: only the script's own error reply
          // (NOSCRIPT, or an error the script raised before writing) is not an unknown outcome
          Throwable cause = e.getCause() != null ? e.getCause() : e;
          if ((noScript(cause) || errorReply(cause)) && !mentionsWait(cause)) {
            results = java.util.Arrays.asList(cause, null);
          } else {
            throw e;
          }
        }
      }
    }
    if (results == null || results.size() != 2) {
      throw new IdemStoreException("Redis pipeline of a script and WAIT gave " + (results == null ? "no" : results.size())
          + " replies instead of 2", null);
    }
    return results;
  }

  @Override
  public List<byte[]> hmget(byte[] key, List<byte[]> fields) {
    try (RedisConnection c = factory.getConnection()) {
      return c.hashCommands().hMGet(key, fields.toArray(new byte[0][]));
    }
  }

  @Override
  public long scan(String pattern, int batchSize, ToLongFunction<String> action) {
    ScanOptions options = ScanOptions.scanOptions().match(pattern).count(batchSize).build();
    try (RedisConnection c = factory.getConnection()) {
      if (c instanceof RedisClusterConnection cluster) {
        return scanClusterMasters(cluster, options, action);
      }
      long removed = 0;
      try (Cursor<byte[]> keys = c.keyCommands().scan(options)) {
        while (keys.hasNext()) {
          removed += action.applyAsLong(new String(keys.next(), StandardCharsets.UTF_8));
        }
      }
      return removed;
    }
  }

  /**
   * Scans every master; a master that cannot be reached is skipped, and when it still owns slots
   * the sweep was partial: {@link IdemStoreException} names it after every other master was swept.
   */
  private static long scanClusterMasters(RedisClusterConnection cluster, ScanOptions options, ToLongFunction<String> action) {
    long removed = 0;
    List<String> missed = new ArrayList<>();
    for (RedisClusterNode node : cluster.clusterGetNodes()) {
      if (!node.isMaster()) {
        continue;
      }
      try (Cursor<byte[]> keys = cluster.scan(node, options)) {
        while (keys.hasNext()) {
          removed += action.applyAsLong(new String(keys.next(), StandardCharsets.UTF_8));
        }
      } catch (IdemStoreException e) {
        throw e;
      } catch (RuntimeException e) {
        if (node.getSlotRange() != null && !node.getSlotRange().getSlots().isEmpty()) {
          missed.add(node.getHost() + ":" + node.getPort());
        }
      }
    }
    if (!missed.isEmpty()) {
      throw new IdemStoreException("Redis purge was partial: deleted " + removed + " records, but the masters "
          + missed + " could not be reached; their expired records are left (Redis still expires them by itself)", null);
    }
    return removed;
  }

  /**
   * Spring Data Redis's Lettuce connection decodes a command it does not know ({@code WAIT}) as a
   * bulk string; this gives it the output the reply needs. Loaded only on a Lettuce connection.
   */
  private static final class LettuceWait {
    static boolean is(RedisConnection c) {
      for (Class<?> k = c.getClass(); k != null; k = k.getSuperclass()) {
        if (k.getName().equals("org.springframework.data.redis.connection.lettuce.LettuceConnection")) {
          return true;
        }
      }
      return false;
    }

    static void execute(RedisConnection c, String command, boolean array, byte[][] args) {
      io.lettuce.core.output.CommandOutput<byte[], byte[], ?> output = array
          ? new io.lettuce.core.output.ArrayOutput<>(io.lettuce.core.codec.ByteArrayCodec.INSTANCE)
          : new io.lettuce.core.output.IntegerOutput<>(io.lettuce.core.codec.ByteArrayCodec.INSTANCE);
      ((org.springframework.data.redis.connection.lettuce.LettuceConnection) c).execute(command, output, args);
    }
  }

  static final String CLUSTER_DURABILITY = "idem.redis.durability waits for replicas with WAIT on the connection"
      + " that ran the script, which Spring Data Redis cannot do on Redis Cluster (it has no pipelines there);"
      + " for Redis Cluster with durability, declare a Jedis RedisClusterClient (UnifiedJedis) bean, which the store"
      + " then uses instead";

  /**
   * @return whether Spring's factory talks to Redis Cluster, asked without connecting ({@code
   *     isClusterAware} of Lettuce's factory, {@code isRedisClusterAware} of Jedis's); {@code false}
   *     for a factory that says neither (its writes then refuse the durability waits on a cluster)
   */
  static boolean clusterAware(RedisConnectionFactory factory) {
    for (String name : new String[] {"isClusterAware", "isRedisClusterAware"}) {
      try {
        Object aware = factory.getClass().getMethod(name).invoke(factory);
        if (aware instanceof Boolean b) {
          return b;
        }
      } catch (ReflectiveOperationException | RuntimeException ignored) {
        // not this factory's method
      }
    }
    return false;
  }

  private static byte[][] keysAndArgs(List<byte[]> keys, List<byte[]> args) {
    byte[][] all = new byte[keys.size() + args.size()][];
    int i = 0;
    for (byte[] k : keys) {
      all[i++] = k;
    }
    for (byte[] a : args) {
      all[i++] = a;
    }
    return all;
  }

  /** Spring Data Redis wraps the client's exception; the server's reply is in the chain. */
  private static boolean noScript(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t.getMessage() != null && t.getMessage().startsWith("NOSCRIPT")) {
        return true;
      }
    }
    return false;
  }

  /**
   * True if the failure is an error reply of the server to the script (Lettuce's {@code
   * RedisCommandExecutionException}, Jedis's {@code JedisDataException}), not a broken connection
   * nor a redirection; looked up by name, so that neither client must be on the class path.
   */
  private static boolean errorReply(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      String message = t.getMessage() == null ? "" : t.getMessage();
      if (message.startsWith("MOVED") || message.startsWith("ASK")) {
        return false;
      }
      for (Class<?> c = t.getClass(); c != null; c = c.getSuperclass()) {
        if (c.getName().equals("io.lettuce.core.RedisCommandExecutionException")
            || c.getName().equals("redis.clients.jedis.exceptions.JedisDataException")) {
          return !t.getClass().getName().equals("redis.clients.jedis.exceptions.JedisMovedDataException")
              && !t.getClass().getName().equals("redis.clients.jedis.exceptions.JedisAskDataException");
        }
      }
    }
    return false;
  }

  private static boolean mentionsWait(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t.getMessage() != null && t.getMessage().toUpperCase(java.util.Locale.ROOT).contains("WAIT")) {
        return true;
      }
    }
    return false;
  }

  private static RuntimeException asRuntime(Throwable t) {
    return t instanceof RuntimeException r ? r : new IllegalStateException(t.getMessage(), t);
  }

  private static String describe(Object reply) {
    return reply == null ? "null" : reply.getClass().getSimpleName();
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  @Override
  public String toString() {
    return "SpringDataRedisStoreClient[" + factory.getClass().getSimpleName() + "]";
  }
}
