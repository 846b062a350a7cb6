package dev.idem.examples.notes;

import java.net.URI;
import java.time.Duration;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;

/**
 * Redis as Idem's lease store, when {@code notes.redis.url} is set (for example {@code
 * redis://127.0.0.1:6379}). Then the service defines a Jedis client, and the starter keeps keys and
 * stored responses in Redis ({@code RedisLeaseStore}) when {@code idem.store} is {@code redis} or
 * {@code auto}; the notes themselves stay in the SQL database. Redis has no transaction shared with
 * that database, so this is for {@code idem.mode=lease} only: the controller's lease-mode path
 * (the note's unique key reference, looked up on a recovery) keeps one note per key.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(prefix = "notes.redis", name = "url")
class NotesRedisConfiguration {

  /**
   * @param url {@code redis://host:port} (a password as {@code redis://:secret@host:port})
   * @param timeout connect and read timeout of each Redis command (default 2 s): a killed server is
   *     noticed within it, and the request answers 503 store unavailable
   * @return the pooled client; closed with the application context
   */
  @Bean(destroyMethod = "close")
  JedisPooled notesRedisClient(@Value("${notes.redis.url}") URI url, @Value("${notes.redis.timeout:2s}") Duration timeout) {
    DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
        .connectionTimeoutMillis((int) timeout.toMillis())
        .socketTimeoutMillis((int) timeout.toMillis());
    String info = url.getUserInfo();
    if (info != null && !info.isEmpty()) {
      int colon = info.indexOf(':');
      if (colon >= 0) {
        if (colon > 0) {
          config.user(info.substring(0, colon));
        }
        config.password(info.substring(colon + 1));
      } else {
        config.password(info);
      }
    }
    return new JedisPooled(new HostAndPort(url.getHost(), url.getPort() < 0 ? 6379 : url.getPort()), config.build());
  }
}
