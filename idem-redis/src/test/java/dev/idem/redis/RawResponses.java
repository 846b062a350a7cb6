package dev.idem.redis;

import java.nio.charset.StandardCharsets;
import redis.clients.jedis.UnifiedJedis;

/**
 * Reads and overwrites the {@code response} field of a record's hash directly, for the lease
 * contract's response-protection tests; shared by the single-node and the cluster contract classes
 * (a cluster client routes by the record's key).
 */
final class RawResponses {

  private static final byte[] RESPONSE = "response".getBytes(StandardCharsets.UTF_8);

  private RawResponses() {}

  static byte[] read(UnifiedJedis client, String recordKey) {
    return client.hget(utf8(recordKey), RESPONSE);
  }

  static void write(UnifiedJedis client, String recordKey, byte[] bytes) {
    byte[] key = utf8(recordKey);
    if (client.hget(key, RESPONSE) == null) {
      throw new AssertionError("no completed record to overwrite");
    }
    client.hset(key, RESPONSE, bytes);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
