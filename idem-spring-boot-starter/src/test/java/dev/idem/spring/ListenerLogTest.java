package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.consumer.Verdict;
import dev.idem.spring.internal.ListenerLog;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/** The WARN lines of a protected listener: at most one a minute of each kind, with the count held back. */
@ExtendWith(OutputCaptureExtension.class)
class ListenerLogTest {

  @Test
  void deadLettersAndStoreFailuresAreLoggedAtMostOnceAMinuteWithTheCountHeldBack(CapturedOutput output) {
    AtomicLong now = new AtomicLong(1_000);
    ListenerLog log = new ListenerLog("billing", now::get);
    Verdict dead = new Verdict(Verdict.Action.DEAD_LETTER, null, "failed on delivery 5 of at most 5: boom");
    Verdict store = Verdict.storeUnavailable(Duration.ofMillis(400), "Idem's store failed: lookup failed");
    for (int i = 0; i < 5; i++) {
      log.verdict("topic 't' partition 0 offset " + i, dead);
      log.verdict("topic 't' partition 0 offset " + i, store);
      now.addAndGet(Duration.ofSeconds(1).toNanos());
    }
    assertThat(lines(output, "dead-lettered")).isEqualTo(1);
    assertThat(lines(output, "cannot use Idem's store")).isEqualTo(1);
    assertThat(output.getOut()).contains("Idem: listener 'billing' dead-lettered a message from topic 't' partition 0 offset 0:"
        + " failed on delivery 5 of at most 5: boom");
    assertThat(output.getOut()).contains("retried after 400 ms");

    now.addAndGet(Duration.ofMinutes(1).toNanos());
    log.verdict("topic 't' partition 0 offset 9", dead);
    assertThat(lines(output, "dead-lettered")).isEqualTo(2);
    assertThat(output.getOut()).contains("offset 9: failed on delivery 5 of at most 5: boom (4 more like it in the last minute not logged)");
    log.verdict("topic 't' partition 0 offset 10", new Verdict(Verdict.Action.ACK, null, null));
    assertThat(lines(output, "Idem: listener")).isEqualTo(3);
  }

  private static long lines(CapturedOutput output, String part) {
    return output.getOut().lines().filter(l -> l.contains(part)).count();
  }
}
