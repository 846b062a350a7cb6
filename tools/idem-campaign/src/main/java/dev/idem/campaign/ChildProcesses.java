package dev.idem.campaign;

import java.util.concurrent.TimeUnit;

/** Killing and stopping a child process the campaign started itself. Stateless, thread-safe. */
final class ChildProcesses {

  private ChildProcesses() {}

  /**
   * Kills {@code process} with SIGKILL and waits up to 10 s for it to end.
   *
   * @param process the child, or {@code null}
   * @return whether it was alive and was killed now
   * @throws InterruptedException if interrupted while waiting
   */
  static boolean kill(Process process) throws InterruptedException {
    if (process == null || !process.isAlive()) {
      return false;
    }
    process.destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
    return true;
  }

  /**
   * Stops {@code process}: SIGTERM, then SIGKILL after 10 s (at once if interrupted, with the
   * interrupt kept). Does nothing for {@code null} or a process that has ended.
   */
  static void stop(Process process) {
    if (process == null || !process.isAlive()) {
      return;
    }
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
