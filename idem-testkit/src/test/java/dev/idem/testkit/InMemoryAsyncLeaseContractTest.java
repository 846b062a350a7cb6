package dev.idem.testkit;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.spi.AsyncLeaseStore;

/** The lease-store contract on the in-memory store's async side. */
class InMemoryAsyncLeaseContractTest extends AsyncLeaseStoreContract {

  private final InMemoryLeaseStore store = new InMemoryLeaseStore();

  @Override
  protected AsyncLeaseStore asyncStore() {
    return store;
  }
}
