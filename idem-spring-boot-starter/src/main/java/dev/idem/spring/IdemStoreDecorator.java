package dev.idem.spring;

import dev.idem.core.spi.LeaseStore;

/**
 * Wraps the auto-configured {@link LeaseStore}, for example to time it or to log its calls. Every
 * bean of this type is applied, in {@link org.springframework.core.annotation.Order order}.
 */
@FunctionalInterface
public interface IdemStoreDecorator {

  /**
   * @param store the store so far, never {@code null}
   * @return the wrapped store, never {@code null}
   */
  LeaseStore decorate(LeaseStore store);
}
