package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The durability modes' validation (no Redis needed). */
class RedisDurabilityTest {

  @Test
  void modesKeepWhatTheyWereGiven() {
    assertThat(RedisDurability.none().isNone()).isTrue();
    assertThat(RedisDurability.none().toString()).isEqualTo("none");
    RedisDurability replicas = RedisDurability.replicas(2, Duration.ofMillis(1500));
    assertThat(replicas.replicas()).isEqualTo(2);
    assertThat(replicas.timeout()).isEqualTo(Duration.ofMillis(1500));
    assertThat(replicas.aof()).isFalse();
    assertThat(replicas).hasToString("replicas(2, 1500ms)").isEqualTo(RedisDurability.replicas(2, Duration.ofMillis(1500)));
    assertThat(RedisDurability.replicasAndAof(1, Duration.ofSeconds(1))).hasToString("replicasAndAof(1, 1000ms)");
  }

  @Test
  void outOfRangeArgumentsAreRefusedWhenTheModeIsMadeNotOnFirstUse() {
    assertThatThrownBy(() -> RedisDurability.replicas(0, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("replicas");
    assertThatThrownBy(() -> RedisDurability.replicas(65, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class);
    // WAIT's timeout 0 means "block forever": never accepted
    assertThatThrownBy(() -> RedisDurability.replicas(1, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RedisDurability.replicas(1, Duration.ofNanos(999_999))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RedisDurability.replicas(1, Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RedisDurability.replicasAndAof(1, Duration.ofDays(365_000_000L)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RedisDurability.replicas(1, null)).isInstanceOf(NullPointerException.class);
  }
}
