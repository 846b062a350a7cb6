package dev.idem.docs.outbox;

/** What {@link OrdersController} calls after recording its message: it may refuse the order. */
@FunctionalInterface
public interface Inventory {

  /**
   * @param item the item ordered
   * @throws IllegalStateException when it is out of stock
   */
  void reserve(String item);
}
