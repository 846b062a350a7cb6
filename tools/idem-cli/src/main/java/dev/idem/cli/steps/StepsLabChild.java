package dev.idem.cli.steps;

import dev.idem.cli.queue.ChildJvm;
import dev.idem.lab.jdbc.JdbcTarget;
import java.net.URI;
import javax.sql.DataSource;

/**
 * The process the steps lab kills: it runs the ride operation, naive or protected, up to its crash
 * point, prints {@value #AT} and the point's name, and waits for SIGKILL. It exits by itself when
 * its parent goes away (standard input closes) or after two minutes, so an interrupted lab leaves no
 * process behind ({@link ChildJvm#exitWhenParentGoes}, {@link ChildJvm#announceAndAwaitKill}).
 *
 * <p>Arguments: {@code variant jdbcUrl paymentsUri key row point}: {@code naive} or {@code
 * protected}; the lab's database; the payment service's proxy; the operation's idempotency key; the
 * row's name (the operation's input); the point, one of {@code ride}, {@code charge-answered},
 * {@code charge} and {@code receipt}.
 */
public final class StepsLabChild {

  /** The line's prefix: the child reached its crash point. */
  static final String AT = "AT ";

  private StepsLabChild() {}

  /**
   * @param args see the class description
   */
  public static void main(String[] args) {
    ChildJvm.exitWhenParentGoes();
    if (args.length != 6) {
      System.err.println("usage: StepsLabChild variant jdbcUrl paymentsUri key row point");
      System.exit(2);
    }
    String variant = args[0];
    DataSource db = JdbcTarget.of(args[1]).dataSource();
    URI payments = URI.create(args[2]);
    String key = args[3];
    String row = args[4];
    String point = args[5];
    StepsLab.Hook crash = p -> {
      if (p.equals(point)) {
        ChildJvm.announceAndAwaitKill(AT + p);
      }
    };
    try {
      if (variant.equals(StepsLab.NAIVE)) {
        StepsLab.naiveRide(db, payments, row, crash);
      } else {
        StepsLab.operations(db).execute(StepsLab.request(key, row), StepsLab.input(row),
            StepsLab.protectedRide(payments, crash));
      }
      throw new IllegalStateException("the operation ended before the point " + point);
    } catch (Exception e) {
      System.err.println("steps lab " + variant + " " + row + ": " + e);
      System.exit(3);
    }
  }
}
