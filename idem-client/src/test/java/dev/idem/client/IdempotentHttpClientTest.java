package dev.idem.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.OutcomeUnknownException;
import java.io.IOException;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client's rules on virtual time: no test sleeps, every wait is counted on a controllable clock. */
class IdempotentHttpClientTest {

  private static final URI NOTES = URI.create("http://127.0.0.1:9/notes");

  private final VirtualTime time = new VirtualTime();
  @TempDir Path dir;

  private IdempotentHttpClient.Builder client(ScriptedTransport transport) {
    return IdempotentHttpClient.builder(transport).clock(time).scheduler(time).random(new Random(42)::nextDouble);
  }

  private ScriptedTransport transport(Function<Integer, Object> script) {
    return new ScriptedTransport(time, Duration.ofMillis(10), script);
  }

  private static HttpOperation save(String title) {
    return HttpOperation.postJson(NOTES, "{\"title\":\"" + title + "\"}");
  }

  // ------------------------------------------------------------------ backoff and Retry-After

  @Test
  void backoffGrowsExponentiallyUpToTheCap() {
    ClientRetryPolicy p = ClientRetryPolicy.builder().baseDelay(Duration.ofMillis(100)).maxDelay(Duration.ofSeconds(1)).build();
    double almostOne = Math.nextDown(1.0);
    assertThat(p.backoff(1, almostOne)).isLessThanOrEqualTo(Duration.ofMillis(100)).isGreaterThan(Duration.ofMillis(99));
    assertThat(p.backoff(2, almostOne)).isLessThanOrEqualTo(Duration.ofMillis(200)).isGreaterThan(Duration.ofMillis(199));
    assertThat(p.backoff(4, almostOne)).isLessThanOrEqualTo(Duration.ofMillis(800)).isGreaterThan(Duration.ofMillis(799));
    assertThat(p.backoff(5, almostOne)).isLessThanOrEqualTo(Duration.ofSeconds(1)).isGreaterThan(Duration.ofMillis(999));
    assertThat(p.backoff(90, almostOne)).as("no overflow far out").isLessThanOrEqualTo(Duration.ofSeconds(1));
    assertThat(p.backoff(3, 0.0)).isEqualTo(Duration.ZERO);
  }

  @Test
  void fullJitterStaysInsideItsBounds() {
    ClientRetryPolicy p = ClientRetryPolicy.builder().baseDelay(Duration.ofMillis(50)).maxDelay(Duration.ofMillis(400)).build();
    Random random = new Random(7);
    for (int retry = 1; retry <= 8; retry++) {
      Duration cap = Duration.ofMillis(Math.min(400, 50L << (retry - 1)));
      Duration min = cap;
      Duration max = Duration.ZERO;
      for (int i = 0; i < 2000; i++) {
        Duration d = p.backoff(retry, random.nextDouble());
        assertThat(d).isBetween(Duration.ZERO, cap);
        min = d.compareTo(min) < 0 ? d : min;
        max = d.compareTo(max) > 0 ? d : max;
      }
      assertThat(min).as("full jitter reaches near zero").isLessThan(cap.dividedBy(10));
      assertThat(max).as("and near the cap").isGreaterThan(cap.multipliedBy(9).dividedBy(10));
    }
  }

  @Test
  void retryAfterParsesSecondsAndHttpDates() {
    Instant now = time.instant();
    assertThat(RetryAfter.parse("120", now)).contains(Duration.ofSeconds(120));
    assertThat(RetryAfter.parse(" 0 ", now)).contains(Duration.ZERO);
    String inThirty = DateTimeFormatter.RFC_1123_DATE_TIME.format(now.plusSeconds(30).atZone(ZoneOffset.UTC));
    assertThat(RetryAfter.parse(inThirty, now)).contains(Duration.ofSeconds(30));
    assertThat(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now)).as("a past date means now").contains(Duration.ZERO);
    assertThat(RetryAfter.parse("-5", now)).isEmpty();
    assertThat(RetryAfter.parse("soon", now)).isEmpty();
    assertThat(RetryAfter.parse(null, now)).isEmpty();
  }

  @Test
  void retryAfterReplacesTheBackoff() throws Exception {
    String date = DateTimeFormatter.RFC_1123_DATE_TIME.format(time.instant().plusSeconds(5).atZone(ZoneOffset.UTC));
    ScriptedTransport t = transport(n -> switch (n) {
      case 1 -> new ScriptedTransport.Reply(503, Map.of("Retry-After", List.of("2")), "");
      case 2 -> new ScriptedTransport.Reply(429, Map.of("Retry-After", List.of(date)), "");
      default -> 201;
    });
    OperationResult r = client(t).build().send(save("a"));
    assertThat(r.attempts()).isEqualTo(3);
    assertThat(Duration.between(t.sent.get(0).at(), t.sent.get(1).at())).isEqualTo(Duration.ofMillis(2010));
    assertThat(t.sent.get(2).at()).isEqualTo(time.instant().minusMillis(10)).isAfterOrEqualTo(t.sent.get(0).at().plusSeconds(5));
  }

  // ------------------------------------------------------------------ the key

  @Test
  void theKeyAndTheBodyAreIdenticalOnEveryAttempt() throws Exception {
    ScriptedTransport t = transport(n -> n <= 2 ? new IOException("connection reset: response lost") : 201);
    OperationResult r = client(t).build().send(save("milk"));
    assertThat(r.attempts()).isEqualTo(3);
    assertThat(t.sent).hasSize(3);
    assertThat(t.sent).extracting(s -> s.request().headers().firstValue("Idempotency-Key").orElseThrow())
        .containsOnly("\"" + r.key() + "\"");
    assertThat(t.sent).extracting(s -> new String(s.body())).containsOnly("{\"title\":\"milk\"}");
  }

  @Test
  void aKeySuppliedByTheCallerIsNeverReplaced() throws Exception {
    ScriptedTransport t = transport(n -> n == 1 ? new HttpTimeoutException("timed out") : 201);
    HttpOperation op = HttpOperation.builder("POST", NOTES).body(new byte[] {1, 2}).idempotencyKey("order-7").build();
    OperationResult r = client(t).keyGenerator(() -> "generated-must-not-be-used").build().send(op);
    assertThat(r.key()).isEqualTo("order-7");
    assertThat(t.sent).extracting(s -> s.request().headers().firstValue("Idempotency-Key").orElseThrow()).containsOnly("\"order-7\"");
  }

  @Test
  void twoOperationsGetTwoKeys() throws Exception {
    ScriptedTransport t = transport(n -> 201);
    IdempotentHttpClient c = client(t).build();
    assertThat(c.send(save("a")).key()).isNotEqualTo(c.send(save("a")).key());
  }

  // ------------------------------------------------------------------ what is retried

  private static ScriptedTransport.Reply problem(int status, String type) {
    return new ScriptedTransport.Reply(status, Map.of("Content-Type", List.of("application/problem+json")),
        "{\"type\":\"" + type + "\",\"title\":\"Idempotency-Key is already used\",\"status\":" + status
            + ",\"detail\":\"this Idempotency-Key was already used with a different request\"}");
  }

  @Test
  void stopsAtOnceOn422WithKeyReused() {
    ScriptedTransport t = transport(n -> problem(422, ClientRetryPolicy.IDEM_KEY_REUSED_PROBLEM_TYPE));
    assertThatThrownBy(() -> client(t).build().send(save("a")))
        .isInstanceOf(IdempotencyKeyReusedException.class)
        .hasMessageContaining("already used with a different request");
    assertThat(t.sent).hasSize(1);
  }

  @Test
  void otherClientErrorsAndA500AreFinal() throws Exception {
    for (int status : new int[] {400, 401, 404, 410, 500}) {
      ScriptedTransport t = transport(n -> status);
      OperationResult r = client(t).build().send(save("a"));
      assertThat(r.status()).isEqualTo(status);
      assertThat(r.attempts()).isEqualTo(1);
    }
  }

  @Test
  void retriesInProgressAndTransientStatuses() throws Exception {
    for (int status : new int[] {408, 409, 425, 429, 502, 503, 504}) {
      ScriptedTransport t = transport(n -> n == 1 ? status : 201);
      assertThat(client(t).build().send(save("a")).attempts()).as("status %d", status).isEqualTo(2);
    }
    ScriptedTransport inProgress = transport(n -> n == 1 ? new ScriptedTransport.Reply(409, Map.of("Retry-After", List.of("1")), "") : 201);
    assertThat(client(inProgress).build().send(save("a")).attempts()).isEqualTo(2);
  }

  // ------------------------------------------------------------------ 409 and 422 (issue: the client misread them)

  @Test
  void a409WithoutRetryAfterIsRetriedWithBackoffAndTheJournalKeepsTheOperation() {
    PendingJournal journal = PendingJournal.open(dir);
    ScriptedTransport t = transport(n -> problem(409, "urn:idem:problem:request-in-progress"));
    ClientRetryPolicy policy = ClientRetryPolicy.builder().maxAttempts(4).baseDelay(Duration.ofMillis(100)).maxDelay(Duration.ofSeconds(1)).build();
    OutcomeUnknownException e = Assertions.catchThrowableOfType(
        () -> client(t).journal(journal).retryPolicy(policy).build().send(save("a")), OutcomeUnknownException.class);
    assertThat(e.attempts()).isEqualTo(4);
    assertThat(e.lastStatus()).isEqualTo(409);
    assertThat(e.serverRetryAfter()).isEmpty();
    assertThat(t.sent).hasSize(4);
    for (int i = 1; i < 4; i++) {
      Duration waited = Duration.between(t.sent.get(i - 1).at(), t.sent.get(i).at()).minusMillis(10);
      assertThat(waited).as("full-jitter backoff before retry %d", i).isBetween(Duration.ZERO, Duration.ofMillis(100L << (i - 1)));
    }
    assertThat(journal.scan().pending()).extracting(PendingJournal.Pending::key).containsExactly(e.key().value());
  }

  @Test
  void a409WithoutRetryAfterThenTheFirstAttemptsAnswerIsReplayed() throws Exception {
    PendingJournal journal = PendingJournal.open(dir);
    ScriptedTransport t = transport(n -> n == 1 ? 409
        : new ScriptedTransport.Reply(201, Map.of("Idempotent-Replayed", List.of("true")), "{\"id\":7}"));
    OperationResult r = client(t).journal(journal).build().send(save("a"));
    assertThat(r.attempts()).isEqualTo(2);
    assertThat(r.status()).isEqualTo(201);
    assertThat(r.replayed()).isTrue();
    assertThat(journal.scan().pending()).isEmpty();
  }

  @Test
  void a409ReplayedFromTheServersStoreIsFinal() throws Exception {
    // The application answered "email already registered" the first time and the server stored it.
    PendingJournal journal = PendingJournal.open(dir);
    ScriptedTransport t = transport(n -> new ScriptedTransport.Reply(409, Map.of("Idempotent-Replayed", List.of("true")), "{\"error\":\"email already registered\"}"));
    OperationResult r = client(t).journal(journal).build().send(save("a"));
    assertThat(r.status()).isEqualTo(409);
    assertThat(r.attempts()).isEqualTo(1);
    assertThat(r.replayed()).isTrue();
    assertThat(journal.scan().pending()).isEmpty();
  }

  @Test
  void anAnswerReplayedFromTheServersStoreIsFinalWhateverItsStatus() throws Exception {
    ScriptedTransport t = transport(n -> new ScriptedTransport.Reply(503, Map.of("Idempotent-Replayed", List.of("true")), "stored 503"));
    OperationResult r = client(t).build().send(save("a"));
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.attempts()).as("every retry would replay the same stored answer").isEqualTo(1);
  }

  @Test
  void anOrdinaryValidation422IsTheServersFinalAnswerAndLeavesTheJournal() throws Exception {
    PendingJournal journal = PendingJournal.open(dir);
    String errors = "{\"errors\":{\"email\":[\"is invalid\"]}}";
    ScriptedTransport t = transport(n -> new ScriptedTransport.Reply(422, Map.of("Content-Type", List.of("application/json")), errors));
    OperationResult r = client(t).journal(journal).build().send(save("a"));
    assertThat(r.status()).isEqualTo(422);
    assertThat(r.attempts()).isEqualTo(1);
    assertThat(r.bodyAsString()).isEqualTo(errors);
    assertThat(journal.scan().pending()).as("the outcome is known").isEmpty();
  }

  @Test
  void a422ProblemOfAnotherTypeIsTheServersFinalAnswer() throws Exception {
    for (ScriptedTransport.Reply reply : List.of(
        problem(422, "https://api.example.com/problems/validation"),
        new ScriptedTransport.Reply(422, Map.of("Content-Type", List.of("application/problem+json")), "{\"title\":\"Unprocessable Content\",\"status\":422}"),
        new ScriptedTransport.Reply(422, Map.of("Content-Type", List.of("application/problem+json")), "not json"),
        new ScriptedTransport.Reply(422, Map.of("Content-Type", List.of("application/problem+json")),
            "{\"errors\":{\"type\":\"" + ClientRetryPolicy.IDEM_KEY_REUSED_PROBLEM_TYPE + "\"}}"))) {
      ScriptedTransport t = transport(n -> reply);
      assertThat(client(t).build().send(save("a")).status()).as(reply.body()).isEqualTo(422);
    }
  }

  @Test
  void theKeyReusedTypeInABodyThatIsNotAProblemIsTheServersFinalAnswer() throws Exception {
    ScriptedTransport.Reply p = problem(422, ClientRetryPolicy.IDEM_KEY_REUSED_PROBLEM_TYPE);
    ScriptedTransport t = transport(n -> new ScriptedTransport.Reply(422, Map.of("Content-Type", List.of("application/json")), p.body()));
    assertThat(client(t).build().send(save("a")).status()).isEqualTo(422);
  }

  @Test
  void theKeyReusedProblemIsRecognisedWithMediaTypeParametersAndAnyCase() {
    ScriptedTransport.Reply p = problem(422, ClientRetryPolicy.IDEM_KEY_REUSED_PROBLEM_TYPE);
    ScriptedTransport t = transport(n -> new ScriptedTransport.Reply(422, Map.of("Content-Type", List.of("Application/Problem+JSON; charset=utf-8")), p.body()));
    assertThatThrownBy(() -> client(t).build().send(save("a"))).isInstanceOf(IdempotencyKeyReusedException.class);
  }

  @Test
  void configuredKeyReusedProblemTypesAreRecognisedInsteadOfIdemsDefault() throws Exception {
    String own = "https://api.example.com/problems/idempotency-key-reused";
    ClientRetryPolicy policy = ClientRetryPolicy.builder().keyReusedProblemTypes(List.of(own)).build();
    ScriptedTransport custom = transport(n -> problem(422, own));
    assertThatThrownBy(() -> client(custom).retryPolicy(policy).build().send(save("a"))).isInstanceOf(IdempotencyKeyReusedException.class);
    ScriptedTransport idems = transport(n -> problem(422, ClientRetryPolicy.IDEM_KEY_REUSED_PROBLEM_TYPE));
    assertThat(client(idems).retryPolicy(policy).build().send(save("a")).status()).isEqualTo(422);
    assertThat(ClientRetryPolicy.defaults().keyReusedProblemTypes()).containsExactly(ClientRetryPolicy.IDEM_KEY_REUSED_PROBLEM_TYPE);
    assertThatThrownBy(() -> ClientRetryPolicy.builder().keyReusedProblemTypes(List.of("idempotency-key-reused")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("absolute URI");
  }

  @Test
  void aKeyReusedRejectionLeavesTheJournal() {
    PendingJournal journal = PendingJournal.open(dir);
    ScriptedTransport t = transport(n -> problem(422, ClientRetryPolicy.IDEM_KEY_REUSED_PROBLEM_TYPE));
    assertThatThrownBy(() -> client(t).journal(journal).build().send(save("a"))).isInstanceOf(IdempotencyKeyReusedException.class);
    assertThat(journal.scan().pending()).isEmpty();
  }

  // ------------------------------------------------------------------ other answers that leave the outcome unknown

  private OutcomeUnknownException exhausted(PendingJournal journal, Function<Integer, Object> script) {
    ScriptedTransport t = transport(script);
    return Assertions.catchThrowableOfType(
        () -> client(t).journal(journal).retryPolicy(ClientRetryPolicy.builder().maxAttempts(3).build()).build().send(save("a")),
        OutcomeUnknownException.class);
  }

  @Test
  void a503WithoutRetryAfterIsRetriedAndStaysInTheJournalWhenTheAttemptsRunOut() {
    PendingJournal journal = PendingJournal.open(dir);
    OutcomeUnknownException e = exhausted(journal, n -> 503);
    assertThat(e.attempts()).isEqualTo(3);
    assertThat(e.lastStatus()).isEqualTo(503);
    assertThat(journal.scan().pending()).extracting(PendingJournal.Pending::key).containsExactly(e.key().value());
  }

  @Test
  void a502AndA504AreRetriedAndStayInTheJournalWhenTheAttemptsRunOut() {
    PendingJournal journal = PendingJournal.open(dir);
    OutcomeUnknownException e = exhausted(journal, n -> n % 2 == 1 ? 502 : 504);
    assertThat(e.attempts()).isEqualTo(3);
    assertThat(journal.scan().pending()).extracting(PendingJournal.Pending::key).containsExactly(e.key().value());
  }

  @Test
  void aConnectionResetAfterTheRequestWasSentIsRetriedAndStaysInTheJournal() {
    PendingJournal journal = PendingJournal.open(dir);
    OutcomeUnknownException e = exhausted(journal, n -> new CompletionException(
        new SocketException("Connection reset")));
    assertThat(e.attempts()).isEqualTo(3);
    assertThat(e.getCause()).isInstanceOf(SocketException.class);
    assertThat(journal.scan().pending()).extracting(PendingJournal.Pending::key).containsExactly(e.key().value());
  }

  @Test
  void aTimeoutIsRetriedAndStaysInTheJournal() {
    PendingJournal journal = PendingJournal.open(dir);
    OutcomeUnknownException e = exhausted(journal, n -> new HttpTimeoutException("request timed out"));
    assertThat(e.attempts()).isEqualTo(3);
    assertThat(journal.scan().pending()).extracting(PendingJournal.Pending::key).containsExactly(e.key().value());
  }

  @Test
  void a425TooEarlyIsRetriedAndStaysInTheJournal() {
    PendingJournal journal = PendingJournal.open(dir);
    OutcomeUnknownException e = exhausted(journal, n -> 425);
    assertThat(e.attempts()).isEqualTo(3);
    assertThat(e.lastStatus()).isEqualTo(425);
    assertThat(journal.scan().pending()).extracting(PendingJournal.Pending::key).containsExactly(e.key().value());
  }

  @Test
  void a408RequestTimeoutIsRetriedAndStaysInTheJournal() {
    PendingJournal journal = PendingJournal.open(dir);
    OutcomeUnknownException e = exhausted(journal, n -> 408);
    assertThat(e.lastStatus()).isEqualTo(408);
    assertThat(journal.scan().pending()).extracting(PendingJournal.Pending::key).containsExactly(e.key().value());
  }

  @Test
  void aRetryAfterHttpDateIsMeasuredAgainstTheServersDateNotTheClientsClock() throws Exception {
    // The server's clock is an hour ahead: "retry at its now + 2 s" is a 2 s wait, not 1 h 2 s.
    Instant serverNow = time.instant().plus(Duration.ofHours(1));
    String date = DateTimeFormatter.RFC_1123_DATE_TIME.format(serverNow.atZone(ZoneOffset.UTC));
    String at = DateTimeFormatter.RFC_1123_DATE_TIME.format(serverNow.plusSeconds(2).atZone(ZoneOffset.UTC));
    ScriptedTransport t = transport(n -> n == 1 ? new ScriptedTransport.Reply(503, Map.of("Retry-After", List.of(at), "Date", List.of(date)), "") : 201);
    OperationResult r = client(t).build().send(save("a"));
    assertThat(r.attempts()).isEqualTo(2);
    assertThat(Duration.between(t.sent.get(0).at(), t.sent.get(1).at())).isEqualTo(Duration.ofMillis(2010));
  }

  @Test
  void retryAfterAcceptsTheObsoleteHttpDateFormats() {
    Instant now = Instant.parse("1994-11-06T08:49:00Z");
    assertThat(RetryAfter.parse("Sunday, 06-Nov-94 08:49:37 GMT", now)).contains(Duration.ofSeconds(37));
    assertThat(RetryAfter.parse("Sun Nov  6 08:49:37 1994", now)).contains(Duration.ofSeconds(37));
    assertThat(RetryAfter.parse("Sun Nov 16 08:49:37 1994", now)).contains(Duration.ofDays(10).plusSeconds(37));
    assertThat(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now)).contains(Duration.ofSeconds(37));
    Instant in2026 = Instant.parse("2026-11-29T12:00:00Z");
    assertThat(RetryAfter.httpDate("Sunday, 29-Nov-26 12:00:05 GMT", in2026)).contains(Instant.parse("2026-11-29T12:00:05Z"));
    assertThat(RetryAfter.httpDate("Monday, 01-Jan-80 00:00:00 GMT", in2026))
        .as("more than 50 years ahead means the last century").contains(Instant.parse("1980-01-01T00:00:00Z"));
    assertThat(RetryAfter.parse("Sunday, 06-Nov-1994 08:49:37 GMT", now)).isEmpty();
  }

  @Test
  void aRetryAfterBeyondTheDeadlineStopsAtOnceAsAnUnknownOutcomeThatStaysInTheJournal() {
    PendingJournal journal = PendingJournal.open(dir);
    for (String huge : List.of("3600", "99999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT")) {
      ScriptedTransport t = transport(n -> new ScriptedTransport.Reply(503, Map.of("Retry-After", List.of(huge)), ""));
      OutcomeUnknownException e = Assertions.catchThrowableOfType(
          () -> client(t).journal(journal).build().send(save(huge)), OutcomeUnknownException.class);
      assertThat(e).as(huge).isNotNull();
      assertThat(e.attempts()).isEqualTo(1);
      assertThat(e.serverRetryAfter()).hasValueSatisfying(d -> assertThat(d).isGreaterThanOrEqualTo(Duration.ofHours(1)));
      assertThat(e.getMessage()).contains("past the deadline");
      assertThat(t.sent).hasSize(1);
      assertThat(journal.scan().pending()).extracting(PendingJournal.Pending::key).contains(e.key().value());
    }
    assertThat(journal.scan().pending()).hasSize(3);
  }

  @Test
  void aReplayIsReported() throws Exception {
    ScriptedTransport t = transport(n -> new ScriptedTransport.Reply(201, Map.of("Idempotent-Replayed", List.of("true")), "{\"id\":1}"));
    assertThat(client(t).build().send(save("a")).replayed()).isTrue();
  }

  // ------------------------------------------------------------------ bounds

  @Test
  void noAttemptStartsAfterTheDeadline() {
    ScriptedTransport t = new ScriptedTransport(time, Duration.ofMillis(300), n -> 503);
    ClientRetryPolicy policy = ClientRetryPolicy.builder().maxAttempts(100).maxDuration(Duration.ofSeconds(2))
        .baseDelay(Duration.ofMillis(100)).maxDelay(Duration.ofMillis(400)).build();
    Instant deadline = time.instant().plus(Duration.ofSeconds(2));
    assertThatThrownBy(() -> client(t).retryPolicy(policy).retryBudget(RetryBudget.unlimited()).build().send(save("a")))
        .isInstanceOfSatisfying(OutcomeUnknownException.class, e -> {
          assertThat(e.attempts()).isEqualTo(t.sent.size());
          assertThat(e.lastStatus()).isEqualTo(503);
        });
    assertThat(t.sent.size()).isGreaterThan(2);
    assertThat(t.sent).allSatisfy(s -> assertThat(s.at()).isBefore(deadline));
  }

  @Test
  void attemptsAreBoundedAndTheOutcomeIsUnknownWithTheKey() throws Exception {
    ScriptedTransport t = transport(n -> new IOException("connection reset"));
    IdempotentHttpClient c = client(t).retryPolicy(ClientRetryPolicy.builder().maxAttempts(3).build()).build();
    OutcomeUnknownException e = Assertions.catchThrowableOfType(() -> c.send(save("a")), OutcomeUnknownException.class);
    assertThat(e.attempts()).isEqualTo(3);
    assertThat(e.lastStatus()).isEqualTo(-1);
    assertThat(e.getCause()).isInstanceOf(IOException.class);
    assertThat(t.sent).hasSize(3);
    String key = t.sent.get(0).request().headers().firstValue("Idempotency-Key").orElseThrow();
    assertThat(key).isEqualTo("\"" + e.key().value() + "\"");
  }

  @Test
  void anUnknownOutcomeIsCoresOneTypeOfTheClientsPhaseAndStillAnIdemException() {
    ScriptedTransport t = transport(n -> 503);
    IdempotentHttpClient c = client(t).retryPolicy(ClientRetryPolicy.builder().maxAttempts(2).build()).build();
    Throwable thrown = Assertions.catchThrowable(() -> c.send(save("a")));
    // A caller that caught dev.idem.core.IdemException to catch everything the client throws still does.
    assertThat(thrown).isInstanceOf(dev.idem.core.IdemException.class).isInstanceOf(OutcomeUnknownException.class);
    OutcomeUnknownException e = (OutcomeUnknownException) thrown;
    assertThat(e.phase()).isEqualTo(OutcomeUnknownException.Phase.CLIENT_RETRIES_EXHAUSTED);
    assertThat(OutcomeUnknownException.thrownByClient(e)).isTrue();
    assertThat(e.attempts()).isEqualTo(2);
    assertThat(e.lastStatus()).isEqualTo(503);
    assertThat(e.serverRetryAfter()).isEmpty();
    assertThat(e.retryAfter()).isEqualTo(Duration.ZERO);
    assertThat(e.serverStatus(ServerKeyStatus.class)).isEmpty();
    assertThat(e.getMessage()).startsWith("outcome unknown after 2 attempt(s) with idempotency key '" + e.key().value() + "' (")
        .endsWith(", last status 503); the effect may exist: resume with the same key");
  }

  @Test
  void theSharedBudgetStopsARetryStorm() {
    AtomicInteger calls = new AtomicInteger();
    ScriptedTransport t = transport(n -> {
      calls.incrementAndGet();
      return 503;
    });
    RetryBudget budget = RetryBudget.create(0.0, 3);
    IdempotentHttpClient c = client(t).retryBudget(budget).retryPolicy(ClientRetryPolicy.builder().maxAttempts(5).build()).build();
    for (int i = 0; i < 10; i++) {
      assertThatThrownBy(() -> c.send(save("x"))).isInstanceOf(OutcomeUnknownException.class);
    }
    assertThat(calls).as("10 first attempts and only the 3 retries the budget held").hasValue(13);
    assertThat(budget.available()).isZero();
  }

  // ------------------------------------------------------------------ the journal

  @Test
  void theJournalHoldsTheOperationBeforeTheFirstSendAndDropsItWhenFinal() throws Exception {
    PendingJournal journal = PendingJournal.open(dir);
    ScriptedTransport t = transport(n -> {
      assertThat(journal.scan().pending()).as("recorded before sending").hasSize(1);
      return 201;
    });
    OperationResult r = client(t).journal(journal).build().send(save("a"));
    assertThat(r.status()).isEqualTo(201);
    assertThat(journal.scan().pending()).isEmpty();
  }

  @Test
  void anUnknownOutcomeStaysInTheJournalAndAResumeUsesTheSameKey() throws Exception {
    PendingJournal journal = PendingJournal.open(dir);
    ScriptedTransport down = transport(n -> new IOException("connection refused"));
    String key = Assertions.catchThrowableOfType(
        () -> client(down).journal(journal).retryPolicy(ClientRetryPolicy.builder().maxAttempts(2).build()).build().send(save("a")),
        OutcomeUnknownException.class).key().value();
    assertThat(journal.scan().pending()).extracting(PendingJournal.Pending::key).containsExactly(key);

    // a new process: a new client on the same journal
    Files.writeString(dir.resolve("garbage.op"), "not=a journal entry\n");
    ScriptedTransport up = transport(n -> new ScriptedTransport.Reply(201, Map.of("Idempotent-Replayed", List.of("true")), "{\"id\":1}"));
    IdempotentHttpClient.ResumeReport report = client(up).journal(journal).build().resumePending();
    assertThat(report.resumed()).hasSize(1);
    assertThat(report.resumed().get(0).result().replayed()).isTrue();
    assertThat(up.sent.get(0).request().headers().firstValue("Idempotency-Key")).contains("\"" + key + "\"");
    assertThat(new String(up.sent.get(0).body())).isEqualTo("{\"title\":\"a\"}");
    assertThat(report.corrupt()).singleElement().satisfies(c -> {
      assertThat(c.file().getFileName().toString()).isEqualTo("garbage.op");
      assertThat(c.reason()).contains("not an Idem journal entry");
    });
    assertThat(journal.scan().pending()).isEmpty();
  }

  @Test
  void builderValidatesEagerly() {
    assertThatThrownBy(() -> ClientRetryPolicy.builder().maxAttempts(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ClientRetryPolicy.builder().baseDelay(Duration.ofSeconds(2)).maxDelay(Duration.ofSeconds(1)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxDelay");
    assertThatThrownBy(() -> RetryBudget.create(-1, 5)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> HttpOperation.builder("POST", URI.create("/relative"))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> HttpOperation.builder("POST", NOTES).header("Idempotency-Key", "x")).isInstanceOf(IllegalArgumentException.class);
  }

  // ------------------------------------------------------------------ key status answers

  private static final URI STATUS = URI.create("http://127.0.0.1:9/idempotency-keys");

  /**
   * Regression: any 404 was read as the endpoint's "no record of this key", so a server without the
   * endpoint, or a proxy's error page, told the caller that a request which may have run never
   * arrived. Only the endpoint's own problem details ({@code "state":"not_found"}) say that.
   */
  @Test
  void onlyTheEndpointsOwnFourOhFourIsNotFound() throws Exception {
    String endpoints404 = "{\"type\":\"urn:idem:problem:idempotency-key-not-found\",\"title\":\"Idempotency-Key not found\","
        + "\"status\":404,\"detail\":\"...\",\"state\":\"not_found\"}";
    ScriptedTransport t = transport(n -> switch (n) {
      case 1 -> new ScriptedTransport.Reply(404, Map.of("Content-Type", List.of("application/problem+json")), endpoints404);
      case 2 -> new ScriptedTransport.Reply(404, Map.of("Content-Type", List.of("text/html")), "<h1>Not Found</h1>");
      case 3 -> new ScriptedTransport.Reply(404, Map.of("Content-Type", List.of("application/problem+json")),
          "{\"title\":\"Not Found\",\"status\":404}");
      default -> new ScriptedTransport.Reply(200, Map.of("Content-Type", List.of("application/json")), "{\"state\":\"not_found\"}");
    });
    IdempotentHttpClient client = client(t).keyStatus(STATUS).build();
    assertThat(client.keyStatus(save("a"), "k-1").state()).isEqualTo(ServerKeyStatus.State.NOT_FOUND);
    for (String what : List.of("an HTML 404", "another problem's 404", "a 200 that says not_found")) {
      assertThatThrownBy(() -> client.keyStatus(save("a"), "k-1")).as(what)
          .isInstanceOf(java.io.UncheckedIOException.class).hasMessageContaining("not the endpoint's key status");
    }
  }

  /**
   * Regression: the status request's timeout bounded only the wait for the response's header
   * fields, so an answer whose body never ended held the caller past its deadline.
   */
  @Test
  void aKeyStatusAnswerThatNeverEndsIsBoundedByTheAttemptTimeout() {
    IdempotentHttpClient.Transport hanging = request -> new java.util.concurrent.CompletableFuture<>();
    IdempotentHttpClient client = IdempotentHttpClient.builder(hanging)
        .retryPolicy(ClientRetryPolicy.builder().attemptTimeout(Duration.ofMillis(200)).build())
        .keyStatus(STATUS).build();
    long began = System.nanoTime();
    assertThatThrownBy(() -> client.keyStatus(save("a"), "k-1")).isInstanceOf(java.io.UncheckedIOException.class)
        .hasRootCauseInstanceOf(java.util.concurrent.TimeoutException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - began)).isLessThan(Duration.ofSeconds(10));
  }
}
