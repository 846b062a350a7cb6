package dev.idem.spring.store;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.spi.LeaseStore;
import dev.idem.redis.RedisLeaseStore;
import dev.idem.spring.LocalRedis;
import dev.idem.testkit.LeaseContract;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.Cursor;
import org.springframework.data.redis.core.ScanOptions;

/**
 * idem-testkit's lease contract on the Redis store over Spring Data Redis ({@link
 * SpringDataRedisStoreClient}), run with Lettuce ({@link SpringDataLettuceLeaseContractTest}) and with
 * Jedis ({@link SpringDataJedisLeaseContractTest}) as Spring's client, on 127.0.0.1:6379 ({@link LocalRedis}), under a key prefix of its own
 * that is deleted afterwards.
 */
abstract class SpringDataRedisLeaseContract extends LeaseContract {

  private static final byte[] RESPONSE = "response".getBytes(StandardCharsets.UTF_8);

  static RedisConnectionFactory factory;
  static final String PREFIX = "idem-spring-contract-" + UUID.randomUUID().toString().substring(0, 8) + ":";

  private final RedisLeaseStore store = RedisLeaseStore.builderFor(new SpringDataRedisStoreClient(factory)).keyPrefix(PREFIX).build();

  @Override
  protected LeaseStore store() {
    return store;
  }

  /** Redis expires records by itself, as in idem-redis's own run of the contract. */
  @Override
  protected boolean purgeCountsRecords() {
    return false;
  }

  @Override
  protected KeyStatusReader statusReader() {
    return store;
  }

  @Override
  protected LeaseStore protectedStore(ResponseProtection protection) {
    return RedisLeaseStore.builderFor(new SpringDataRedisStoreClient(factory)).keyPrefix(PREFIX).responseProtection(protection).build();
  }

  @Override
  protected byte[] rawResponse(Scope scope, IdempotencyKey key) {
    try (RedisConnection c = factory.getConnection()) {
      return c.hashCommands().hGet(utf8(store.recordKey(scope, key)), RESPONSE);
    }
  }

  @Override
  protected void writeRawResponse(Scope scope, IdempotencyKey key, byte[] bytes) {
    byte[] record = utf8(store.recordKey(scope, key));
    try (RedisConnection c = factory.getConnection()) {
      if (c.hashCommands().hGet(record, RESPONSE) == null) {
        throw new AssertionError("no completed record to overwrite");
      }
      c.hashCommands().hSet(record, RESPONSE, bytes);
    }
  }

  static void cleanUp() {
    if (factory == null) {
      return;
    }
    try (RedisConnection c = factory.getConnection()) {
      List<byte[]> keys = new ArrayList<>();
      try (Cursor<byte[]> found = c.keyCommands().scan(ScanOptions.scanOptions().match(PREFIX + "*").count(1000).build())) {
        found.forEachRemaining(keys::add);
      }
      if (!keys.isEmpty()) {
        c.keyCommands().del(keys.toArray(new byte[0][]));
      }
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
