package dev.idem.redis;

import dev.idem.redis.RedisStoreClient.Acknowledged;
import dev.idem.redis.RedisStoreClient.Script;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.async.RedisHashAsyncCommands;
import io.lettuce.core.api.async.RedisKeyAsyncCommands;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.ArrayOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import io.lettuce.core.support.AsyncPool;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The store's commands on Lettuce's asynchronous API ({@code io.lettuce.core}, whose {@code
 * RedisFuture} is a {@link CompletionStage}), for an {@link AsyncRedisLeaseStore}: nothing here
 * waits for I/O; every stage completes on Lettuce's event loop. Lettuce is an optional dependency
 * of idem-redis: an application that uses this class brings {@code io.lettuce:lettuce-core}.
 *
 * <p>Built on a connection with the byte-array codec ({@code client.connect(ByteArrayCodec.INSTANCE)}),
 * which the store shares with whatever else uses it (Lettuce multiplexes one connection): to a
 * standalone server (or a Sentinel-managed master, {@link #of(StatefulRedisConnection)}), or to a
 * Redis Cluster ({@link #of(StatefulRedisClusterConnection)}), where Lettuce routes each command by
 * its first key, the record key, whose hash tag is the record's digest, and follows {@code MOVED}
 * and {@code ASK} itself.
 *
 * <p><b>Durability.</b> {@code WAIT} holds every command queued behind it on its connection, so a
 * store with a {@link RedisDurability} other than none must not run it on the shared connection.
 * {@link #of(StatefulRedisConnection, AsyncPool)} gives the client a pool (Lettuce's {@code
 * BoundedAsyncPool}, acquired without blocking) of connections of their own for those writes: each
 * takes one, sends the script and {@code WAIT} (or {@code WAITAOF}) in a row on it, and gives it
 * back once both replied; reads and writes that wait for nothing stay on the shared connection.
 * Size the pool for the writes that wait at once (each holds its connection up to the durability's
 * timeout), and keep the connections' command timeout longer than that timeout. The cluster client
 * has no such pool: an {@link AsyncRedisLeaseStore} with durability refuses it (use the blocking
 * {@link RedisLeaseStore} on Jedis's cluster client for durable writes on a cluster).
 *
 * <p>Thread-safe. Does not own the connection nor the pool: closing them is the caller's business.
 */
public final class LettuceStoreClient implements AsyncRedisStoreClient {

  private final RedisScriptingAsyncCommands<byte[], byte[]> scripting;
  private final RedisHashAsyncCommands<byte[], byte[]> hashes;
  private final RedisKeyAsyncCommands<byte[], byte[]> keys;
  private final @Nullable AsyncPool<StatefulRedisConnection<byte[], byte[]>> waiting;
  /** The cluster connection, whose masters {@link #scan} walks one by one; null for one server. */
  private final @Nullable StatefulRedisClusterConnection<byte[], byte[]> cluster;
  private final String description;

  private <C extends RedisScriptingAsyncCommands<byte[], byte[]> & RedisHashAsyncCommands<byte[], byte[]>
      & RedisKeyAsyncCommands<byte[], byte[]>> LettuceStoreClient(C commands,
      @Nullable AsyncPool<StatefulRedisConnection<byte[], byte[]>> waiting,
      @Nullable StatefulRedisClusterConnection<byte[], byte[]> cluster, String description) {
    this.scripting = commands;
    this.hashes = commands;
    this.keys = commands;
    this.waiting = waiting;
    this.cluster = cluster;
    this.description = description;
  }

  /**
   * A client on a connection to a standalone server (or a Sentinel-managed master), for a store
   * with {@link RedisDurability#none()}.
   *
   * @param connection a connection with the byte-array codec, never {@code null}
   * @return the client, never {@code null}
   * @throws NullPointerException if {@code connection} is {@code null}
   */
  public static LettuceStoreClient of(StatefulRedisConnection<byte[], byte[]> connection) {
    return new LettuceStoreClient(Objects.requireNonNull(connection, "connection").async(), null, null,
        "LettuceStoreClient[shared connection]");
  }

  /**
   * A client on a shared connection to a standalone server (or a Sentinel-managed master) and a
   * pool of connections to the same server for the writes that wait for replicas: for a store
   * with any {@link RedisDurability}.
   *
   * @param connection a connection with the byte-array codec, for every command that waits for
   *     nothing, never {@code null}
   * @param waiting a pool of connections with the byte-array codec to the same server, used by no
   *     one else, never {@code null}
   * @return the client, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   */
  public static LettuceStoreClient of(StatefulRedisConnection<byte[], byte[]> connection,
      AsyncPool<StatefulRedisConnection<byte[], byte[]>> waiting) {
    return new LettuceStoreClient(Objects.requireNonNull(connection, "connection").async(), Objects.requireNonNull(waiting, "waiting"),
        null, "LettuceStoreClient[shared connection, pool for waiting writes]");
  }

  /**
   * A client on a connection to a Redis Cluster, for a store with {@link RedisDurability#none()}.
   * Lettuce routes each command by the record key to the master that owns its slot.
   *
   * @param connection a cluster connection with the byte-array codec, never {@code null}
   * @return the client, never {@code null}
   * @throws NullPointerException if {@code connection} is {@code null}
   */
  public static LettuceStoreClient of(StatefulRedisClusterConnection<byte[], byte[]> connection) {
    return new LettuceStoreClient(Objects.requireNonNull(connection, "connection").async(), null, connection,
        "LettuceStoreClient[shared cluster connection]");
  }

  @Override
  public CompletionStage<@Nullable Object> eval(Script script, List<byte[]> keys, List<byte[]> args) {
    byte[][] k = keys.toArray(new byte[0][]);
    byte[][] a = args.toArray(new byte[0][]);
    ScriptOutputType type = outputType(script);
    CompletableFuture<@Nullable Object> result = new CompletableFuture<>();
    scripting.<@Nullable Object>evalsha(sha1(script), type, k, a).whenComplete((reply, failure) -> {
      if (failure == null) {
        result.complete(reply);
      } else if (noScript(failure)) {
        Stages.relay(scripting.<@Nullable Object>eval(script.source(), type, k, a), result);
      } else {
        result.completeExceptionally(failure);
      }
    });
    return result;
  }

  /**
   * The script and then {@code WAIT} (or {@code WAITAOF}) in a row on a connection of the pool, given
   * back once both replied.
   *
   * @throws IllegalStateException (in the stage) if this client has no pool for waiting writes
   */
  @Override
  public CompletionStage<Acknowledged> evalAndWait(Script script, List<byte[]> keys, List<byte[]> args, RedisDurability durability) {
    AsyncPool<StatefulRedisConnection<byte[], byte[]>> pool = waiting;
    if (pool == null) {
      return CompletableFuture.failedFuture(new IllegalStateException(description + " has no connections for writes that wait"));
    }
    byte[][] k = keys.toArray(new byte[0][]);
    byte[][] a = args.toArray(new byte[0][]);
    return pool.acquire().thenCompose(connection -> {
      CompletionStage<Acknowledged> done = Stages.call(() -> attempt(connection.async(), script, k, a, true, durability));
      return done.whenComplete((ignored, failure) -> pool.release(connection));
    });
  }

  private CompletionStage<Acknowledged> attempt(RedisAsyncCommands<byte[], byte[]> c, Script script, byte[][] k, byte[][] a,
      boolean bySha, RedisDurability durability) {
    ScriptOutputType type = outputType(script);
    // both sent before either reply: in a row on this connection, so WAIT counts the script's write
    CompletionStage<@Nullable Object> reply = bySha ? c.evalsha(sha1(script), type, k, a) : c.eval(script.source(), type, k, a);
    CompletionStage<long[]> acknowledgements = acknowledgements(c, durability);
    CompletableFuture<Acknowledged> result = new CompletableFuture<>();
    reply.whenComplete((value, scriptFailure) -> acknowledgements.whenComplete((counts, waitFailure) -> {
      if (scriptFailure != null && bySha && noScript(scriptFailure)) {
        Stages.relay(Stages.call(() -> attempt(c, script, k, a, false, durability)), result);
      } else if (scriptFailure != null) {
        Throwable cause = Stages.unwrap(scriptFailure);
        if (cause instanceof RedisCommandExecutionException e && !redirected(e)) {
          result.complete(Acknowledged.scriptFailed(e)); // an error of the script itself (IDEMCORRUPT, ...): no write
        } else {
          result.completeExceptionally(cause); // the connection broke: the outcome is unknown
        }
      } else if (waitFailure != null) {
        result.completeExceptionally(Stages.unwrap(waitFailure));
      } else {
        result.complete(Acknowledged.of(value, counts[0], counts[1]));
      }
    }));
    return result;
  }

  /** @return a stage with {@code {masterFsynced, replicas}}: {@code WAITAOF}'s two numbers, or 0 and {@code WAIT}'s */
  private static CompletionStage<long[]> acknowledgements(RedisAsyncCommands<byte[], byte[]> c, RedisDurability durability) {
    long timeoutMillis = durability.timeout().toMillis();
    if (!durability.aof()) {
      return c.waitForReplication(durability.replicas(), timeoutMillis).thenApply(n -> new long[] {0, n});
    }
    CommandArgs<byte[], byte[]> args = new CommandArgs<>(ByteArrayCodec.INSTANCE).add(1).add(durability.replicas()).add(timeoutMillis);
    return c.dispatch(WaitAof.WAITAOF, new ArrayOutput<>(ByteArrayCodec.INSTANCE), args).thenApply(reply -> {
      if (reply.size() != 2 || !(reply.get(0) instanceof Long local) || !(reply.get(1) instanceof Long replicas)) {
        throw new IllegalStateException("WAITAOF gave an unexpected reply: " + reply);
      }
      return new long[] {local, replicas};
    });
  }

  @Override
  public CompletionStage<List<byte @Nullable []>> hmget(byte[] key, List<byte[]> fields) {
    return hashes.hmget(key, fields.toArray(new byte[0][])).thenApply(values -> {
      List<byte @Nullable []> out = new ArrayList<>(values.size());
      for (KeyValue<byte[], byte[]> value : values) {
        out.add(value.hasValue() ? value.getValue() : null);
      }
      return out;
    });
  }

  /**
   * {@code SCAN} page by page, each key given to {@code action} once the previous key's stage
   * completed. On a cluster, the masters that own slots (in the connection's slot map) one after
   * the other, each over its node connection, opened without blocking (Lettuce's own cluster
   * {@code SCAN} opens a node's connection by waiting for it, on the event loop).
   */
  @Override
  public CompletionStage<Long> scan(String pattern, int batchSize, Function<String, CompletionStage<Long>> action) {
    ScanArgs args = ScanArgs.Builder.matches(pattern).limit(batchSize);
    StatefulRedisClusterConnection<byte[], byte[]> c = cluster;
    if (c == null) {
      return page(keys, keys.scan(args), args, action, 0L);
    }
    List<String> masters = new ArrayList<>();
    for (RedisClusterNode node : c.getPartitions()) {
      if (node.is(RedisClusterNode.NodeFlag.UPSTREAM) && !node.getSlots().isEmpty()) {
        masters.add(node.getNodeId());
      }
    }
    CompletionStage<Long> removed = CompletableFuture.completedFuture(0L);
    for (String nodeId : masters) {
      removed = removed.thenCompose(sum -> c.getConnectionAsync(nodeId)
          .thenCompose(node -> page(node.async(), node.async().scan(args), args, action, sum)));
    }
    return removed;
  }

  private static CompletionStage<Long> page(RedisKeyAsyncCommands<byte[], byte[]> on, CompletionStage<KeyScanCursor<byte[]>> scan,
      ScanArgs args, Function<String, CompletionStage<Long>> action, long removedBefore) {
    return scan.thenCompose(cursor -> {
      CompletionStage<Long> removed = CompletableFuture.completedFuture(removedBefore);
      for (byte[] found : cursor.getKeys()) {
        String key = new String(found, StandardCharsets.UTF_8);
        removed = removed.thenCompose(sum -> action.apply(key).thenApply(n -> sum + n));
      }
      if (cursor.isFinished()) {
        return removed;
      }
      return removed.thenCompose(sum -> page(on, on.scan(cursor, args), args, action, sum));
    });
  }

  @Override
  public boolean waitsOnDedicatedConnections() {
    return waiting != null;
  }

  /** @return what the client runs on, for messages */
  @Override
  public String toString() {
    return description;
  }

  private static String sha1(Script script) {
    return new String(script.sha1(), StandardCharsets.US_ASCII);
  }

  private static ScriptOutputType outputType(Script script) {
    return script.returnsArray() ? ScriptOutputType.MULTI : ScriptOutputType.INTEGER;
  }

  private static boolean noScript(Throwable failure) {
    Throwable cause = Stages.unwrap(failure);
    return cause instanceof RedisCommandExecutionException && cause.getMessage() != null && cause.getMessage().startsWith("NOSCRIPT");
  }

  /** @return whether the node no longer owns the slot: the script did not run there */
  private static boolean redirected(RedisCommandExecutionException e) {
    String m = e.getMessage();
    return m != null && (m.startsWith("MOVED") || m.startsWith("ASK"));
  }

  /** {@code WAITAOF}, which Lettuce 6.6's command types do not name. */
  private enum WaitAof implements ProtocolKeyword {
    WAITAOF;

    private final byte[] bytes = name().getBytes(StandardCharsets.US_ASCII);

    @Override
    public byte[] getBytes() {
      return bytes.clone();
    }
  }
}
