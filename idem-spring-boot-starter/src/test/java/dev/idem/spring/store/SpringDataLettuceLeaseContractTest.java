package dev.idem.spring.store;

import dev.idem.spring.LocalRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/** The lease contract on the Redis store over Spring Data Redis with Lettuce, Spring Boot's default client. */
class SpringDataLettuceLeaseContractTest extends SpringDataRedisLeaseContract {

  @BeforeAll
  static void connect() {
    LocalRedis.require();
    LettuceConnectionFactory f = new LettuceConnectionFactory(new RedisStandaloneConfiguration(LocalRedis.HOST, LocalRedis.PORT));
    f.afterPropertiesSet();
    f.start();
    factory = f;
  }

  @AfterAll
  static void close() {
    cleanUp();
    if (factory != null) {
      ((LettuceConnectionFactory) factory).destroy();
      factory = null;
    }
  }
}
