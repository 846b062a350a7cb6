package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.lab.HttpLab;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The second article's six cases end to end over real HTTP, through the fault proxy, against two
 * real notes services (with Idem, and with idem.enabled=false), asserting the notes stored in each
 * service, row by row, as in the article's table.
 */
class HttpLabTest {

  @TempDir static Path dir;
  static ConfigurableApplicationContext withIdem;
  static ConfigurableApplicationContext withoutIdem;
  static List<HttpLab.Row> rows;

  @BeforeAll
  static void runTheLab() throws Exception {
    withIdem = start("protected", true);
    withoutIdem = start("unprotected", false);
    rows = new HttpLab(baseOf(withIdem), baseOf(withoutIdem)).run();
  }

  @AfterAll
  static void stop() {
    if (withIdem != null) {
      withIdem.close();
    }
    if (withoutIdem != null) {
      withoutIdem.close();
    }
  }

  private static ConfigurableApplicationContext start(String name, boolean idem) throws IOException {
    Files.createDirectories(dir.resolve(name));
    return SpringApplication.run(NotesApplication.class,
        "--server.port=0", "--server.address=127.0.0.1",
        "--spring.datasource.url=" + Api.sqliteUrl(dir.resolve(name)),
        "--idem.enabled=" + idem);
  }

  private static URI baseOf(ConfigurableApplicationContext context) {
    int port = context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    return URI.create("http://127.0.0.1:" + port);
  }

  private static HttpLab.Row row(String name) {
    return rows.stream().filter(r -> r.name().equals(name)).findFirst().orElseThrow();
  }

  @Test
  void aNewKeyPerAttemptStoresTwoNotesAndAnswersWithTheSecond() {
    HttpLab.Row r = row("new key per attempt");
    assertThat(r.sends()).isEqualTo(2);
    assertThat(r.notesStored()).isEqualTo(2);
    assertThat(r.result()).startsWith("second note");
  }

  @Test
  void theSameKeyStoresOneNoteAndReplaysTheOriginal() {
    HttpLab.Row r = row("same key");
    assertThat(r.sends()).isEqualTo(2);
    assertThat(r.notesStored()).isEqualTo(1);
    assertThat(r.result()).startsWith("original note (replayed)");
  }

  @Test
  void twoIndependentSavesStoreTwoNotesWithDistinctIds() {
    HttpLab.Row r = row("two independent saves");
    assertThat(r.sends()).isEqualTo(2);
    assertThat(r.notesStored()).isEqualTo(2);
    assertThat(r.result()).startsWith("distinct ids");
  }

  @Test
  void anotherTitleWithAnExistingKeyIsRejectedAndStoresNothingMore() {
    HttpLab.Row r = row("other title with an existing key");
    assertThat(r.notesStored()).isEqualTo(1);
    assertThat(r.result()).isEqualTo("rejected (422)");
  }

  @Test
  void bothResponsesLostEndsInAnUnknownOutcomeWithOneNoteStored() {
    HttpLab.Row r = row("both responses lost");
    assertThat(r.sends()).isEqualTo(2);
    assertThat(r.notesStored()).isEqualTo(1);
    assertThat(r.result()).isEqualTo("error after attempt 2, outcome unknown");
  }

  @Test
  void theSameKeyWithoutDeduplicationStoresTwoNotes() {
    HttpLab.Row r = row("same key with deduplication disabled");
    assertThat(r.sends()).isEqualTo(2);
    assertThat(r.notesStored()).isEqualTo(2);
    assertThat(r.result()).startsWith("second note");
  }
}
