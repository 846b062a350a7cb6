package dev.idem.lab;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** What the lab prints of a URL: never a password, in either place a URL can carry one. */
class LabRedactTest {

  @Test
  void aPasswordParameterIsMasked() {
    assertThat(Lab.redact("jdbc:postgresql://127.0.0.1:5432/app?user=app&password=s3cret&ssl=false"))
        .isEqualTo("jdbc:postgresql://127.0.0.1:5432/app?user=app&password=***&ssl=false");
  }

  @Test
  void thePasswordOfUserInfoIsMasked() {
    // the queue lab's broker URLs carry it there (it was LabDatabase's own rule before the lab shared one)
    assertThat(Lab.redact("amqp://guest:guest@127.0.0.1:5672")).isEqualTo("amqp://guest:***@127.0.0.1:5672");
  }

  @Test
  void aUrlWithoutPasswordIsUnchanged() {
    assertThat(Lab.redact("jdbc:sqlite:/tmp/lab.db")).isEqualTo("jdbc:sqlite:/tmp/lab.db");
  }
}
