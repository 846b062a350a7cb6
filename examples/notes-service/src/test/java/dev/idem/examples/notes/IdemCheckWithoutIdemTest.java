package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.check.CheckName;
import dev.idem.check.CheckReport;
import dev.idem.check.IdemCheck;
import dev.idem.check.Verdict;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * idem check on the notes service with {@code idem.enabled=false}: the lost-response and
 * concurrency checks must fail, with the duplicate notes counted, and the run must fail. Counted
 * from the answers (the service's Location fields), the default.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IdemCheckWithoutIdemTest {

  @TempDir static Path dir;
  ConfigurableApplicationContext app;
  CheckReport report;

  @BeforeAll
  void runTheChecks() throws Exception {
    app = SpringApplication.run(NotesApplication.class, "--server.port=0", "--server.address=127.0.0.1",
        "--spring.datasource.url=" + Api.sqliteUrl(dir), "--idem.enabled=false");
    URI base = URI.create("http://127.0.0.1:" + app.getEnvironment().getRequiredProperty("local.server.port", Integer.class));
    report = IdemCheck.builder(base.resolve("/notes")).body(IdemCheckContract.BODY).settle(IdemCheckContract.SETTLE)
        .build().run();
    System.out.println(getClass().getSimpleName() + "\n" + report.toTable());
  }

  @AfterAll
  void stop() {
    if (app != null) {
      app.close();
    }
  }

  @Test
  void theLostResponseCheckFailsWithTwoNotes() {
    assertThat(report.result(CheckName.LOST_RESPONSE).verdict()).as(report.toTable()).isEqualTo(Verdict.FAIL);
    assertThat(report.result(CheckName.LOST_RESPONSE).effects()).hasValue(2);
  }

  @Test
  void theConcurrencyCheckFailsWithANoteForEachAttempt() {
    assertThat(report.result(CheckName.CONCURRENT_DUPLICATES).verdict()).as(report.toTable()).isEqualTo(Verdict.FAIL);
    assertThat(report.result(CheckName.CONCURRENT_DUPLICATES).effects()).hasValue(8);
  }

  @Test
  void theRunFailsWhileTheControlShowsTheCountingWorks() {
    assertThat(report.result(CheckName.CONTROL).verdict()).isEqualTo(Verdict.PASS);
    assertThat(report.exitStatus()).isEqualTo(1);
    assertThat(report.failures()).extracting(r -> r.name())
        .contains(CheckName.LOST_RESPONSE, CheckName.CONCURRENT_DUPLICATES, CheckName.KEY_REUSE)
        .doesNotContain(CheckName.CONTROL);
    assertThat(report.countingIsReal()).isFalse();
    assertThat(List.of(report.counting())).allMatch(c -> c.startsWith("from the answers"));
  }
}
