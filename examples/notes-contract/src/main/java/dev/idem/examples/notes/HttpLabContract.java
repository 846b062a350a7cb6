package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.lab.HttpLab;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The second article's six cases end to end over real HTTP, through the fault proxy, against two
 * real notes services (with Idem, and with {@code idem.enabled=false}), asserting the notes stored
 * in each service, row by row, as in the article's table. Each implementation of the notes service
 * (Spring MVC, Spring WebFlux) runs it by subclassing: a subclass starts a service on a database of
 * its own and stops them all afterwards.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class HttpLabContract {

  private List<HttpLab.Row> rows = List.of();

  /**
   * Starts one notes service on 127.0.0.1 on a database of its own, empty.
   *
   * @param name {@code protected} or {@code unprotected}
   * @param idem its {@code idem.enabled}
   * @return its base URI, such as {@code http://127.0.0.1:41234}
   */
  protected abstract URI start(String name, boolean idem) throws Exception;

  /** Stops every service {@link #start} started. */
  protected abstract void stopAll() throws Exception;

  @BeforeAll
  void runTheLab() throws Exception {
    rows = new HttpLab(start("protected", true), start("unprotected", false)).run();
  }

  @AfterAll
  void stop() throws Exception {
    stopAll();
  }

  private HttpLab.Row row(String name) {
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

  @Test
  void everyRowMatchesTheArticlesTable() {
    assertThat(rows).hasSize(6).allSatisfy(r -> assertThat(r.ok()).as(r.name()).isTrue());
  }
}
