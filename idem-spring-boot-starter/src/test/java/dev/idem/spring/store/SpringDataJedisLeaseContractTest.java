package dev.idem.spring.store;

import dev.idem.spring.LocalRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;

/** The lease contract on the Redis store over Spring Data Redis with Jedis as Spring's client (spring.data.redis.client-type=jedis). */
class SpringDataJedisLeaseContractTest extends SpringDataRedisLeaseContract {

  @BeforeAll
  static void connect() {
    LocalRedis.require();
    JedisConnectionFactory f = new JedisConnectionFactory(new RedisStandaloneConfiguration(LocalRedis.HOST, LocalRedis.PORT));
    f.afterPropertiesSet();
    f.start();
    factory = f;
  }

  @AfterAll
  static void close() {
    cleanUp();
    if (factory != null) {
      ((JedisConnectionFactory) factory).destroy();
      factory = null;
    }
  }
}
