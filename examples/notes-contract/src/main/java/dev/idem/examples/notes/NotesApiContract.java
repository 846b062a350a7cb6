package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.faultproxy.Fault;
import dev.idem.faultproxy.FaultProxy;
import dev.idem.faultproxy.LoggedRequest;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The notes API over real HTTP, checked against what the database holds afterwards. Every
 * implementation of the notes service (the Spring Boot one, the plain servlet one) runs it on every
 * database by subclassing: a subclass starts the service, then answers the hooks below (its port,
 * and reads and writes on its database); the tests are never copied.
 */
public abstract class NotesApiContract {

  private static final ObjectMapper JSON = new ObjectMapper();

  Api api;

  /** @return the port the service under test listens on, on 127.0.0.1 */
  protected abstract int port();

  /** @return the name of the product of the service's database ({@code DatabaseMetaData}) */
  protected abstract String databaseProduct() throws Exception;

  /**
   * @param sql a query for one number, such as {@code SELECT COUNT(*) FROM notes}
   * @return the number, read from the service's database
   */
  protected abstract long queryForLong(String sql) throws Exception;

  /** @param sql a statement run on the service's database, committed at once */
  protected abstract void update(String sql) throws Exception;

  @BeforeEach
  void emptyTables() throws Exception {
    api = Api.at(port());
    update("DELETE FROM notes");
    update("DELETE FROM idem_keys");
  }

  private long notes() throws Exception {
    return queryForLong("SELECT COUNT(*) FROM notes");
  }

  private List<JsonNode> listed() throws Exception {
    HttpResponse<String> list = api.get("/notes");
    assertThat(list.statusCode()).isEqualTo(200);
    List<JsonNode> out = new ArrayList<>();
    JSON.readTree(list.body()).forEach(out::add);
    return out;
  }

  private static String key() {
    return UUID.randomUUID().toString();
  }

  /** @return a word the database's product name contains, such as {@code PostgreSQL} */
  protected abstract String expectedProduct();

  @Test
  void runsOnTheIntendedDatabase() throws Exception {
    assertThat(databaseProduct()).containsIgnoringCase(expectedProduct());
  }

  @Test
  void theSameKeyTwiceCreatesOneNoteAndReplaysTheFirstAnswer() throws Exception {
    String key = key();
    HttpResponse<String> first = api.postTitle(key, "Idempotency keys, explained");
    HttpResponse<String> second = api.postTitle(key, "Idempotency keys, explained");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    JsonNode note = JSON.readTree(first.body());
    long id = note.get("id").asLong();
    assertThat(note.get("title").asText()).isEqualTo("Idempotency keys, explained");
    assertThat(first.headers().firstValue("Location")).contains("/notes/" + id);
    assertThat(first.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));

    assertThat(second.statusCode()).isEqualTo(201);
    assertThat(second.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(second.body()).isEqualTo(first.body());
    assertThat(second.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));

    assertThat(notes()).isEqualTo(1);
    assertThat(listed()).singleElement().satisfies(n -> {
      assertThat(n.get("id").asLong()).isEqualTo(id);
      assertThat(n.get("title").asText()).isEqualTo("Idempotency keys, explained");
    });
    HttpResponse<String> one = api.get("/notes/" + id);
    assertThat(one.statusCode()).isEqualTo(200);
    assertThat(JSON.readTree(one.body())).isEqualTo(note);
  }

  /**
   * Regression: a multipart body without a boundary, or one that ends before its closing boundary,
   * made the container's getParts() throw an IOException that escaped the filter as a 500. Where
   * the container parses it (Spring's multipart support) the answer is 400; a service without
   * multipart support refuses the media type with 415 before reading the body.
   */
  @Test
  void aMalformedMultipartBodyIs400NotA500() throws Exception {
    HttpResponse<String> noBoundary = api.post("mp-" + UUID.randomUUID(), "multipart/form-data", "garbage");
    assertThat(noBoundary.statusCode()).isIn(400, 415);
    assertThat(noBoundary.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    HttpResponse<String> truncated = api.post("mp-" + UUID.randomUUID(), "multipart/form-data; boundary=xyz",
        "--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue");
    assertThat(truncated.statusCode()).isIn(400, 415);
    assertThat(notes()).isZero();
  }

  /**
   * Regression (found by the fault campaign's fuzzing): Spring MVC parses every {@code multipart/*}
   * request, not only {@code multipart/form-data}, before it chooses a handler; {@code
   * multipart/mixed} without a boundary made that parse throw a MultipartException that Spring MVC
   * answered 500. It is the request's fault: 400 (Spring MVC's failed parse) or 415 (a service
   * that checks the media type before reading), as a problem, and no note.
   */
  @Test
  void aMultipartMixedBodyWithoutABoundaryIs400NotA500() throws Exception {
    HttpResponse<String> r = api.post("mm-" + UUID.randomUUID(), "multipart/mixed", "{\"title\":\"mixed\"}");

    assertThat(r.statusCode()).isIn(400, 415);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    assertThat(notes()).isZero();
  }

  /**
   * Regression: with {@code Accept: text/plain} the note was inserted, then the framework answered
   * 406 while writing the result; that 406 was stored and replayed to the retry that accepts JSON,
   * so the key could never give the note back. A 406 is now released: the first attempt's insert
   * rolls back (transactional) and the retry creates and answers the one note.
   */
  @Test
  void aNotAcceptableAnswerIsNotStoredAndTheRetryGetsTheNote() throws Exception {
    String key = "acc-" + UUID.randomUUID();
    HttpResponse<String> refused = api.post(key, "application/json", "{\"title\":\"acc\"}", "text/plain");
    assertThat(refused.statusCode()).isEqualTo(406);
    HttpResponse<String> retry = api.post(key, "application/json", "{\"title\":\"acc\"}", "application/json");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(notes()).isEqualTo(1);
    HttpResponse<String> replay = api.post(key, "application/json", "{\"title\":\"acc\"}", "application/json");
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(replay.body()).isEqualTo(retry.body());
  }

  @Test
  void aPostWithoutAKeyIsRefusedWith400AndCreatesNothing() throws Exception {
    HttpResponse<String> r = api.postTitle(null, "no key");

    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    JsonNode problem = JSON.readTree(r.body());
    assertThat(problem.get("status").asInt()).isEqualTo(400);
    assertThat(problem.get("type").asText()).endsWith(":idempotency-key-missing");
    assertThat(notes()).isZero();
  }

  @Test
  void theSameKeyWithAnotherTitleIs422AndKeepsTheFirstNoteOnly() throws Exception {
    String key = key();
    HttpResponse<String> first = api.postTitle(key, "first title");
    HttpResponse<String> reuse = api.postTitle(key, "another title");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(reuse.statusCode()).isEqualTo(422);
    assertThat(reuse.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    assertThat(JSON.readTree(reuse.body()).get("type").asText()).endsWith(":idempotency-key-reused");
    assertThat(listed()).extracting(n -> n.get("title").asText()).containsExactly("first title");
  }

  @Test
  void bigIntegersBeyondDoublePrecisionWithOneKeyAre422() throws Exception {
    HttpResponse<String> first = api.post("big2", "{\"title\":\"big\",\"account\":1234567890123456789}");
    HttpResponse<String> other = api.post("big2", "{\"title\":\"big\",\"account\":1234567890123456700}");
    HttpResponse<String> same = api.post("big2", "{ \"account\": 1234567890123456789.0, \"title\": \"big\" }");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(other.statusCode()).isEqualTo(422);
    assertThat(JSON.readTree(other.body()).get("type").asText()).endsWith(":idempotency-key-reused");
    assertThat(same.statusCode()).isEqualTo(201);
    assertThat(same.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(same.body()).isEqualTo(first.body());
    assertThat(notes()).isEqualTo(1);
  }

  /**
   * Regression (the plain servlet notes service read any body as JSON): a JSON text sent as {@code
   * text/plain}, or with no {@code Content-Type}, made a note there, while the Spring service
   * refused it. A note is made only from {@code application/json}: 415, as a problem, and no note.
   */
  @Test
  void aJsonTextSentAsTextPlainOrWithoutAContentTypeIs415AndMakesNoNote() throws Exception {
    HttpResponse<String> text = api.post(key(), "text/plain", "{\"title\":\"plain\"}");
    HttpResponse<String> none = api.post(key(), null, "{\"title\":\"untyped\"}");

    assertThat(text.statusCode()).isEqualTo(415);
    assertThat(none.statusCode()).isEqualTo(415);
    assertThat(text.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    assertThat(notes()).isZero();
  }

  @Test
  void sameBytesAsJsonThenTextPlainWithOneKeyAre422() throws Exception {
    for (String body : new String[] {"{\"title\":\"typed\"}", " { \"title\" : \"typed\" } "}) {
      String key = key();
      HttpResponse<String> json = api.post(key, "application/json", body);
      HttpResponse<String> text = api.post(key, "text/plain", body);
      HttpResponse<String> none = api.post(key, null, body);
      HttpResponse<String> spelled = api.post(key, "Application/JSON; charset=UTF-8", body);

      assertThat(json.statusCode()).isEqualTo(201);
      assertThat(text.statusCode()).as("text/plain after JSON, body %s", body).isEqualTo(422);
      assertThat(none.statusCode()).as("no Content-Type after JSON, body %s", body).isEqualTo(422);
      assertThat(spelled.statusCode()).isEqualTo(201);
      assertThat(spelled.headers().firstValue("Idempotent-Replayed")).contains("true");
    }
    assertThat(notes()).isEqualTo(2);
  }

  @Test
  void aLostResponseThenARetryWithTheSameKeyGivesOneNoteAndTheFirstId() throws Exception {
    String key = key();
    try (FaultProxy proxy = FaultProxy.builder().target("127.0.0.1", port()).fault(1, Fault.LOSE_RESPONSE).start()) {
      Api viaProxy = new Api(proxy.uri());
      // Request 1: the service saves the note and answers 201, the proxy drops the answer.
      assertThatThrownBy(() -> viaProxy.postTitle(key, "saved, answer lost")).isInstanceOf(IOException.class);
      assertThat(notes()).as("the effect happened although the client saw an error").isEqualTo(1);
      long savedId = queryForLong("SELECT id FROM notes");

      // Request 2: the client's retry, same key, same body.
      HttpResponse<String> retry = viaProxy.postTitle(key, "saved, answer lost");

      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(JSON.readTree(retry.body()).get("id").asLong()).isEqualTo(savedId);
      assertThat(retry.headers().firstValue("Location")).contains("/notes/" + savedId);
      assertThat(notes()).isEqualTo(1);

      assertThat(proxy.await(2, Duration.ofSeconds(5))).isTrue();
      List<LoggedRequest> log = proxy.log();
      assertThat(log).hasSize(2);
      assertThat(log.get(0)).satisfies(r -> {
        assertThat(r.fault()).isEqualTo(Fault.LOSE_RESPONSE);
        assertThat(r.status()).isEqualTo(OptionalInt.of(201));
        assertThat(r.delivered()).isFalse();
        assertThat(r.idempotencyKey()).isEqualTo(Optional.of(key));
      });
      assertThat(log.get(1).delivered()).isTrue();
      assertThat(log.get(1).idempotencyKey()).isEqualTo(Optional.of(key));
    }
  }

  @Test
  void concurrentDuplicatesCreateOneNote() throws Exception {
    String key = key();
    int n = 6;
    CyclicBarrier start = new CyclicBarrier(n);
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<HttpResponse<String>>> answers = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        answers.add(pool.submit(() -> {
          start.await(10, TimeUnit.SECONDS);
          return Api.at(port()).postTitle(key, "raced");
        }));
      }
      int created = 0;
      List<String> bodies = new ArrayList<>();
      for (Future<HttpResponse<String>> f : answers) {
        HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
        // transactional mode: a duplicate that arrives while the first runs waits on the key's
        // row and gets the replay, like one that arrives after it.
        assertThat(r.statusCode()).isEqualTo(201);
        bodies.add(r.body());
        if (r.headers().firstValue("Idempotent-Replayed").isEmpty()) {
          created++;
        }
      }
      assertThat(created).isEqualTo(1);
      assertThat(bodies).containsOnly(bodies.get(0));
      assertThat(notes()).isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void titlesMustHave1To200Characters() throws Exception {
    for (String bad : new String[] {"", "   ", "x".repeat(201)}) {
      HttpResponse<String> r = api.postTitle(key(), bad);
      assertThat(r.statusCode()).as("title of %d chars", bad.length()).isEqualTo(400);
      assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
      assertThat(JSON.readTree(r.body()).get("status").asInt()).isEqualTo(400);
    }
    HttpResponse<String> notAString = api.post(key(), "{\"title\": 42}");
    assertThat(notAString.statusCode()).isEqualTo(400);
    HttpResponse<String> noTitle = api.post(key(), "{}");
    assertThat(noTitle.statusCode()).isEqualTo(400);
    assertThat(notes()).isZero();

    // 200 characters, counted as characters: 200 emoji are 400 UTF-16 units, still one title.
    String longest = "\uD83D\uDCDD".repeat(200);
    assertThat(api.postTitle(key(), "x".repeat(200)).statusCode()).isEqualTo(201);
    assertThat(api.postTitle(key(), longest).statusCode()).isEqualTo(201);
    assertThat(listed()).extracting(n -> n.get("title").asText()).containsExactly("x".repeat(200), longest);
  }

  @Test
  void notesAreListedInIdOrderAndUnknownIdsAre404() throws Exception {
    List<Long> ids = new ArrayList<>();
    for (String title : List.of("one", "two", "three")) {
      ids.add(JSON.readTree(api.postTitle(key(), title).body()).get("id").asLong());
    }
    assertThat(ids).isSorted();
    assertThat(listed()).extracting(n -> n.get("id").asLong()).containsExactlyElementsOf(ids);
    assertThat(listed()).extracting(n -> n.get("title").asText()).containsExactly("one", "two", "three");

    HttpResponse<String> missing = api.get("/notes/" + (ids.get(2) + 1000));
    assertThat(missing.statusCode()).isEqualTo(404);
    assertThat(missing.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
  }
}
