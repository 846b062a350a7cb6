package dev.idem.r2dbc;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * What BlockHound lets r2dbc-mariadb (1.3) block on: its client serialises the commands of one
 * connection with a {@code ReentrantLock}, held for the few instructions that queue a command,
 * which the event loop may meet taken by the thread that sends the next command. That is the
 * driver's design, not a wait on I/O; nothing of Idem's is allowed to block, and nothing of
 * r2dbc-postgresql's.
 */
public final class MariadbDriverLocks implements BlockHoundIntegration {

  @Override
  public void applyTo(BlockHound.Builder builder) {
    String client = "org.mariadb.r2dbc.client.SimpleClient";
    for (String method : new String[] {"executeWhenNotInTransaction", "executeWhenTransaction", "lambda$receive$14",
        "lambda$sendCommand$16", "lambda$sendCommand$19", "setAutoCommit", "sendCommandWithoutResult"}) {
      builder.allowBlockingCallsInside(client, method);
    }
  }
}
