package dev.idem.examples.notes.webflux;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * BlockHound is on for this module's tests (blockhound-junit-platform installs it when the test
 * plan starts): the notes API contract and the HTTP lab run against a service whose event loops
 * refuse any blocking call, so a handler or a filter that blocked would fail them.
 */
class BlockHoundTest {

  @Test
  void blockingOnANonBlockingThreadIsAnError() {
    assertThatThrownBy(() -> Mono.fromCallable(() -> {
          Thread.sleep(1);
          return 1;
        }).subscribeOn(Schedulers.parallel()).block(Duration.ofSeconds(10)))
        .hasCauseInstanceOf(BlockingOperationError.class);
  }
}
