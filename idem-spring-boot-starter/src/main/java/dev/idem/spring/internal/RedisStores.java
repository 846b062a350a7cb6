package dev.idem.spring.internal;

import dev.idem.core.spi.LeaseStore;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;

/**
 * The Redis store on the application's client; a bean only when idem-redis is on the class path.
 * Names no type of idem-redis, Jedis or Spring Data Redis, so that the store's bean method may
 * ask for it on any class path.
 */
public interface RedisStores {

  /** @return whether the application has a Redis client the store can run on */
  boolean hasClient();

  /**
   * @param p the properties ({@code idem.redis.*}, {@code idem.protection.*})
   * @return the store on the application's client
   * @throws IdemConfigurationException if a property is wrong
   */
  LeaseStore create(IdemProperties p);

  /** @return what {@code idem.store=redis} lacks, as the dependencies or beans to add */
  String missing();
}
