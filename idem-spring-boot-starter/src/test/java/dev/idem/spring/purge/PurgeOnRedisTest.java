package dev.idem.spring.purge;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spring.BootLine;
import dev.idem.spring.LocalRedis;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * Regression: in lease mode on Redis (no key table) the scheduler's lock is the Redis lease store,
 * and it claimed with lease == retention == the interval, which RedisLeaseStore refuses ("retention
 * must be longer than the lease"): every scheduled run failed with a WARN and nothing got the lock.
 */
@ExtendWith(OutputCaptureExtension.class)
class PurgeOnRedisTest {

  @BeforeEach
  void redis() {
    LocalRedis.require();
  }

  @Test
  void theScheduledPurgeOnARedisStoreGetsItsLock(CapturedOutput output) {
    run(output, "idem.mode=lease", "idem.store=redis");
  }

  /** The defaults (idem.mode=auto, idem.store=auto) of an application whose only store is Redis. */
  @Test
  void theScheduledPurgeWithDefaultPropertiesAndOnlyRedisGetsItsLock(CapturedOutput output) {
    run(output);
  }

  private void run(CapturedOutput output, String... properties) {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.plus(BootLine.redis(), AopAutoConfiguration.class))))
        .withPropertyValues("spring.data.redis.host=" + LocalRedis.HOST, "spring.data.redis.port=" + LocalRedis.PORT,
            "idem.principal=shared",
            "idem.redis.key-prefix=idem-break-" + UUID.randomUUID().toString().substring(0, 8) + ":")
        .withPropertyValues(properties)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed().hasSingleBean(IdemPurgeScheduler.class);
          assertThat(output.getOut()).contains("Idem: expired keys are purged every PT1H");
          long removed = ctx.getBean(IdemPurgeScheduler.class).purgeIfElected();
          System.out.println("PurgeOnRedisTest: purgeIfElected on Redis: " + removed);
          assertThat(output.getOut()).doesNotContain("the scheduled purge failed");
          assertThat(removed).as("the only instance gets the lock and purges (>= 0)").isGreaterThanOrEqualTo(0);
        });
  }
}
