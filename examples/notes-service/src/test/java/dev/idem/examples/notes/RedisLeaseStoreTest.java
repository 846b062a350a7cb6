package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * With {@code notes.redis.url} set and {@code idem.store=redis}, the keys and stored responses live
 * in Redis (the machine's server on 127.0.0.1:6379, under a prefix of this test's own) and the notes
 * in SQLite: a retry is replayed from Redis, and one note is stored per key.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"idem.mode=lease", "idem.store=redis", "notes.redis.url=redis://127.0.0.1:6379"})
@DirtiesContext
class RedisLeaseStoreTest {

  static final String PREFIX = "notes-test-" + UUID.randomUUID() + ":";

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> Api.sqliteUrl(dir));
    registry.add("idem.redis.key-prefix", () -> PREFIX);
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  @Autowired JedisPooled redis;

  @AfterAll
  static void removeKeys() {
    try (JedisPooled r = new JedisPooled("127.0.0.1", 6379)) {
      for (String k : keys(r)) {
        r.del(k);
      }
    }
  }

  /** @return every Redis key under this test's prefix */
  static List<String> keys(JedisPooled r) {
    List<String> keys = new ArrayList<>();
    String cursor = ScanParams.SCAN_POINTER_START;
    do {
      ScanResult<String> page = r.scan(cursor, new ScanParams().match(PREFIX + "*").count(1000));
      keys.addAll(page.getResult());
      cursor = page.getCursor();
    } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
    return keys;
  }

  @Test
  void keysAndStoredResponsesLiveInRedisAndARetryIsReplayedFromThere() throws Exception {
    Api api = Api.at(port);
    String key = "\"" + UUID.randomUUID() + "\"";

    HttpResponse<String> first = api.postTitle(key, "kept in Redis");
    HttpResponse<String> again = api.postTitle(key, "kept in Redis");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(again.statusCode()).isEqualTo(201);
    assertThat(again.body()).isEqualTo(first.body());
    assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(jdbc.queryForObject("SELECT count(*) FROM notes WHERE title = 'kept in Redis'", Integer.class)).isEqualTo(1);
    assertThat(keys(redis)).as("the key's record in Redis").isNotEmpty();
  }
}
