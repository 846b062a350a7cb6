package dev.idem.testkit;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.spi.LeaseStore;

/** The lease contract on the in-memory store. */
class InMemoryLeaseContractTest extends LeaseContract {

  private final InMemoryLeaseStore store = new InMemoryLeaseStore();

  @Override
  protected LeaseStore store() {
    return store;
  }
}
