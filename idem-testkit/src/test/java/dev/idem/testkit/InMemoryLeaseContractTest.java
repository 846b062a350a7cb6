package dev.idem.testkit;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.spi.LeaseStore;

/** The lease contract on the in-memory store. */
class InMemoryLeaseContractTest extends LeaseContract {

  private final InMemoryLeaseStore store = new InMemoryLeaseStore();

  @Override
  protected LeaseStore store() {
    return store;
  }

  @Override
  protected KeyStatusReader statusReader() {
    return store;
  }

  @Override
  protected LeaseStore protectedStore(ResponseProtection protection) {
    return store.withProtection(protection);
  }

  @Override
  protected byte[] rawResponse(Scope scope, IdempotencyKey key) {
    return store.storedResponseBytes(scope, key);
  }

  @Override
  protected void writeRawResponse(Scope scope, IdempotencyKey key, byte[] bytes) {
    if (!store.replaceStoredResponseBytes(scope, key, bytes)) {
      throw new AssertionError("no completed record to overwrite");
    }
  }
}
