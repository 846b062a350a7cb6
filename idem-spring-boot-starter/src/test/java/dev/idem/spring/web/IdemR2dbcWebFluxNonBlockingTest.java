package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * {@link IdemR2dbcWebFluxTest}'s application, both modes, with BlockHound installed: any blocking
 * call on a Reactor Netty event loop (the server's, the R2DBC driver's) or on a Reactor non-blocking
 * scheduler fails the request, and so the test. The starter's build runs this class alone in a JVM
 * of its own (BlockHound cannot be uninstalled, and other tests of the starter block on purpose).
 */
class IdemR2dbcWebFluxNonBlockingTest extends IdemR2dbcWebFluxTest {

  @BeforeAll
  static void installBlockHound() {
    BlockHound.install();
  }

  /** BlockHound is on: a sleep on a Reactor non-blocking thread is an error, not a pause. */
  @Test
  void blockingOnANonBlockingThreadIsAnError() {
    assertThatThrownBy(() -> Mono.fromCallable(() -> {
          Thread.sleep(1);
          return 1;
        }).subscribeOn(Schedulers.parallel()).block(Duration.ofSeconds(10)))
        .hasCauseInstanceOf(BlockingOperationError.class);
  }
}
