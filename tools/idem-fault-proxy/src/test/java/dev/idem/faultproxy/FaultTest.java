package dev.idem.faultproxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link Fault} values and the eager validation of {@link FaultProxy.Builder}. */
class FaultTest {

  @Test
  void toStringRoundTripsThroughParse() {
    for (Fault f :
        List.of(
            Fault.NONE,
            Fault.LOSE_RESPONSE,
            Fault.DROP_REQUEST,
            Fault.delay(Duration.ofMillis(500)),
            Fault.delay(Duration.ofNanos(1500)))) {
      assertThat(Fault.parse(f.toString())).isEqualTo(f);
    }
    assertThat(Fault.parse(" LOSE_RESPONSE ")).isSameAs(Fault.LOSE_RESPONSE);
    assertThat(Fault.parse("delay:2s")).isEqualTo(Fault.delay(Duration.ofSeconds(2)));
    assertThat(Fault.parse("delay:PT0.25S")).isEqualTo(Fault.delay(Duration.ofMillis(250)));
    assertThat(Fault.delay(Duration.ofMillis(500))).hasToString("delay:500ms");
  }

  @Test
  void invalidFaultsAreRejected() {
    assertThatThrownBy(() -> Fault.parse("explode")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Fault.parse("delay:soon")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Fault.parse("delay:P1Y")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Fault.parse(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> Fault.delay(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Fault.delay(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void faultValues() {
    assertThat(Fault.delay(Duration.ofMillis(5)).kind()).isEqualTo(Fault.Kind.DELAY);
    assertThat(Fault.delay(Duration.ofMillis(5)).delay()).isEqualTo(Duration.ofMillis(5));
    assertThat(Fault.NONE.delay()).isEqualTo(Duration.ZERO);
    assertThat(Fault.delay(Duration.ofMillis(5))).isNotEqualTo(Fault.delay(Duration.ofMillis(6)));
    assertThat(Fault.delay(Duration.ofMillis(5)).hashCode()).isEqualTo(Fault.delay(Duration.ofMillis(5)).hashCode());
  }

  @Test
  void builderValidatesEagerly() {
    FaultProxy.Builder b = FaultProxy.builder();
    assertThatThrownBy(() -> b.target(null, 80)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> b.target(" ", 80)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.target("127.0.0.1", 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.target("127.0.0.1", 65536)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.listenPort(-1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.fault(0, Fault.NONE)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.fault(1, null)).isInstanceOf(NullPointerException.class);
    b.fault(1, Fault.LOSE_RESPONSE);
    assertThatThrownBy(() -> b.fault(1, Fault.DROP_REQUEST))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("already");
    assertThatThrownBy(() -> b.readTimeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.readTimeout(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> b.maxBodyBytes(-1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.maxBodyBytes(FaultProxy.MAX_BODY_BYTES_LIMIT + 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.maxHeaderBytes(10)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(b::start).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void startReportsItsPortAndRules() throws Exception {
    try (FaultProxy proxy =
        FaultProxy.builder()
            .target("127.0.0.1", 9)
            .fault(3, Fault.delay(Duration.ofMillis(500)))
            .fault(1, Fault.LOSE_RESPONSE)
            .start()) {
      assertThat(proxy.port()).isPositive();
      assertThat(proxy.faults())
          .containsExactly(
              Map.entry(1, Fault.LOSE_RESPONSE), Map.entry(3, Fault.delay(Duration.ofMillis(500))));
      assertThat(proxy.requestsSeen()).isZero();
      assertThat(proxy.log()).isEmpty();
      assertThat(proxy.await(0, Duration.ZERO)).isTrue();
      assertThat(proxy.await(1, Duration.ofMillis(10))).isFalse();
      assertThat(proxy.toString()).contains("-> 127.0.0.1:9").contains("lose-response");
    }
  }

  @Test
  void startFailsOnAPortInUse() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      FaultProxy.Builder b = FaultProxy.builder().target("127.0.0.1", 9).listenPort(taken.getLocalPort());
      assertThatThrownBy(b::start).isInstanceOf(IOException.class);
    }
  }
}
