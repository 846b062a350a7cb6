package dev.idem.check;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idem.faultproxy.Fault;
import dev.idem.faultproxy.FaultProxy;
import dev.idem.faultproxy.LoggedRequest;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/** One run of every check against one API. Not thread-safe: one run, one instance. */
final class Checks {

  /** Two integers that are the same IEEE 754 double (2^53 + 1 rounds to 2^53). */
  static final String BIG_NUMBER = "9007199254740993";
  static final String BIG_NUMBER_NEIGHBOUR = "9007199254740992";
  /** The member added to a JSON object body when the template has no {@code {{number}}}. */
  static final String NUMBER_MEMBER = "idem_check_number";
  /** The number {@code {{number}}} stands for outside the big-number check. */
  static final String PLAIN_NUMBER = "42";
  /** The longest wait for a 409's {@code Retry-After} in the lost-response check. */
  private static final long MAX_RETRY_AFTER_SECONDS = 5;
  /** Extra retries after a 409 in the lost-response check. */
  static final int RETRIES_AFTER_409 = 2;
  /** The most requests a run sends besides the concurrent ones, and the most count queries. */
  static final int SENDS_BESIDES_CONCURRENT = 2 + (2 + RETRIES_AFTER_409) + 2 + 2 + 2 + 1 + 2 + 1;
  static final int COUNT_QUERIES = 2 * 6;

  private final IdemCheck config;
  private final Exchange exchange;
  private final Counting counting;
  private final List<Answer> errorAnswers = Collections.synchronizedList(new ArrayList<>());
  private final Map<CheckName, CheckResult> results = new EnumMap<>(CheckName.class);
  /** Set by the key-reuse check: whether the API refused different content under a used key. */
  private Boolean comparesContent;
  /** Set by the control: whether the create request succeeds at all. */
  private boolean createWorks;

  Checks(IdemCheck config, Exchange exchange, Counting counting) {
    this.config = config;
    this.exchange = exchange;
    this.counting = counting;
  }

  /** A check that cannot go on, with the verdict and why. */
  private static final class Stop extends Exception {
    private static final long serialVersionUID = 1L;
    final Verdict verdict;

    Stop(Verdict verdict, String message) {
      super(message, null, false, false);
      this.verdict = verdict;
    }
  }

  /** What one check has sent and seen so far. */
  private final class Run {
    final CheckName name;
    final long started = System.nanoTime();
    final List<Answer> answers = new ArrayList<>();
    int sends;

    Run(CheckName name) {
      this.name = name;
    }

    Answer post(List<String> keys, String body) throws ApiUnreachableException, InterruptedException {
      return record(exchange.send(config.target(), keys, body), true);
    }

    Answer record(Answer a, boolean direct) {
      sends++;
      answers.add(a);
      if (direct && a.status >= 400) {
        errorAnswers.add(a);
      }
      return a;
    }

    CheckResult result(Verdict verdict, OptionalLong effects, String detail) {
      Verdict v = verdict == Verdict.FAIL && !name.required() ? Verdict.WARNING : verdict;
      Map<String, Integer> grouped = new LinkedHashMap<>();
      answers.forEach(a -> grouped.merge(a.label(), 1, Integer::sum));
      String shown = grouped.entrySet().stream()
          .map(e -> e.getKey() + (e.getValue() > 1 ? " x" + e.getValue() : ""))
          .collect(Collectors.joining(", "));
      return new CheckResult(name, v, sends, shown, effects, detail, Duration.ofNanos(System.nanoTime() - started));
    }
  }

  /** Counts the effects of one check: real counts before and after, or from the answers. */
  private final class Effects {
    private final String marker;
    private long before;

    Effects(String marker) throws Stop, InterruptedException {
      this.marker = marker;
      if (counting.real) {
        before = count(marker);
      }
    }

    OptionalLong after(List<Answer> answers) throws Stop, InterruptedException {
      if (counting.real) {
        return OptionalLong.of(count(marker) - before);
      }
      Set<String> ids = new LinkedHashSet<>();
      for (Answer a : answers) {
        if (a.success()) {
          Optional<String> id = a.identity();
          if (id.isEmpty()) {
            return OptionalLong.empty();
          }
          ids.add(id.get());
        }
      }
      return OptionalLong.of(ids.size());
    }

    private long count(String marker) throws Stop, InterruptedException {
      try {
        return counting.count(exchange, marker);
      } catch (InterruptedException e) {
        throw e;
      } catch (ApiUnreachableException e) {
        throw new Stop(Verdict.FAIL, "cannot count the effects: " + e.getMessage());
      } catch (Exception e) {
        throw new Stop(Verdict.FAIL, "cannot count the effects: " + e.getMessage());
      }
    }
  }

  private interface Body {
    CheckResult run(Run run) throws Stop, ApiUnreachableException, InterruptedException;
  }

  Map<CheckName, CheckResult> runAll() throws ApiUnreachableException, InterruptedException {
    run(CheckName.CONTROL, this::control);
    if (!createWorks) {
      for (CheckName n : CheckName.values()) {
        results.putIfAbsent(n, new CheckResult(n, Verdict.SKIPPED, 0, "", OptionalLong.empty(),
            "not run: the create request itself does not succeed (see control)", Duration.ZERO));
      }
      return results;
    }
    run(CheckName.LOST_RESPONSE, this::lostResponse);
    run(CheckName.CONCURRENT_DUPLICATES, this::concurrentDuplicates);
    run(CheckName.KEY_REUSE, this::keyReuse);
    run(CheckName.FINGERPRINT_REORDERED, this::fingerprintReordered);
    run(CheckName.FINGERPRINT_BIG_NUMBER, this::fingerprintBigNumber);
    run(CheckName.MISSING_KEY, this::missingKey);
    run(CheckName.MALFORMED_KEY, this::malformedKey);
    run(CheckName.SECOND_KEY_FIELD, this::secondKeyField);
    run(CheckName.PROBLEM_DETAILS, this::problemDetails);
    return results;
  }

  private void run(CheckName name, Body body) throws ApiUnreachableException, InterruptedException {
    Run run = new Run(name);
    CheckResult r;
    try {
      r = body.run(run);
    } catch (Stop stop) {
      r = run.result(stop.verdict, OptionalLong.empty(), stop.getMessage());
    }
    results.put(name, r);
  }

  // ---- the checks ----

  private CheckResult control(Run run) throws Stop, ApiUnreachableException, InterruptedException {
    // one marker (the count sees both), two keys, each with its own {{key-uuid}} (a unique field may take it)
    String marker = marker();
    Effects effects = new Effects(marker);
    Answer first = run.post(List.of(key()), config.render(marker, keyValue(), PLAIN_NUMBER));
    if (!first.success()) {
      throw new Stop(Verdict.FAIL, "the create request was answered " + describe(first)
          + "; check the URL, --body and the -H headers");
    }
    createWorks = true;
    Answer second = run.post(List.of(key()), config.render(marker, keyValue(), PLAIN_NUMBER));
    OptionalLong n = effects.after(run.answers);
    if (n.isEmpty()) {
      return run.result(Verdict.FAIL, n, "BLIND: the answers carry neither a Location field nor an \"id\" member, so"
          + " effects cannot be counted from them and no count below proves anything; use --count-url or --count-sql");
    }
    if (n.getAsLong() == 2) {
      return run.result(Verdict.PASS, n, "two keys, two effects: the counting can see a duplicate");
    }
    if (n.getAsLong() == 1 && !second.success()) {
      return run.result(Verdict.FAIL, n, "BLIND: the second request, under another key, was answered "
          + describe(second) + ", so a duplicate would be invisible and no \"1 effect\" below proves anything"
          + (config.hasKeyPlaceholder()
              ? ""
              : "; if the API keeps a field unique (an order number), put {{key-uuid}} in it: a fresh value"
                  + " per key, the same in every retry of one key"));
    }
    if (n.getAsLong() == 1) {
      return run.result(Verdict.FAIL, n, "BLIND: two requests with different keys counted as one effect, so a"
          + " duplicate would be invisible and no \"1 effect\" below proves anything (does the API merge equal"
          + " content, or does the count not see the marker?)");
    }
    return run.result(Verdict.FAIL, n, "two requests with different keys counted as " + n.getAsLong()
        + " effects, not 2: the counting does not measure this API's effects");
  }

  private CheckResult lostResponse(Run run) throws Stop, ApiUnreachableException, InterruptedException {
    URI target = config.target();
    if (!"http".equalsIgnoreCase(target.getScheme())) {
      throw new Stop(Verdict.FAIL, "not shown: the fault proxy speaks plain HTTP/1.1 and cannot lose a response"
          + " over " + target.getScheme() + "; run the check against a plain http address of the service");
    }
    String marker = marker();
    String body = config.render(marker, keyValue(), PLAIN_NUMBER);
    String key = key();
    Effects effects = new Effects(marker);
    int port = target.getPort() > 0 ? target.getPort() : 80;
    try (FaultProxy proxy = FaultProxy.builder()
        .target(target.getHost(), port)
        .fault(1, Fault.LOSE_RESPONSE)
        .recordResponses(true)
        .readTimeout(config.timeout())
        .start()) {
      URI viaProxy = proxy.uri().resolve(target.getRawPath()
          + (target.getRawQuery() == null ? "" : "?" + target.getRawQuery()));
      Answer seen = exchange.send(viaProxy, List.of(key), body);
      run.sends++;
      if (seen.answered()) {
        throw new Stop(Verdict.FAIL, "the fault proxy did not lose the response (the checker got " + seen.status + ")");
      }
      if (!proxy.await(1, config.timeout())) {
        throw new Stop(Verdict.FAIL, "the fault proxy did not finish the first request within " + config.timeout());
      }
      LoggedRequest logged = proxy.log().get(0);
      if (logged.response().isEmpty()) {
        throw new Stop(Verdict.FAIL, "the API did not answer the first attempt: "
            + logged.error().orElse("no response"));
      }
      Answer lost = Answer.lost(logged.response().get());
      run.answers.add(lost);
      if (!lost.success()) {
        throw new Stop(Verdict.FAIL, "the first attempt was answered " + describe(lost));
      }
      Answer retry = null;
      for (int attempt = 0; attempt <= RETRIES_AFTER_409; attempt++) {
        if (attempt > 0) {
          TimeUnit.SECONDS.sleep(retryAfterSeconds(retry));
        }
        retry = run.record(exchange.send(viaProxy, List.of(key), body), false);
        if (retry.status != 409) {
          break;
        }
      }
      OptionalLong n = effects.after(run.answers);
      List<String> problems = new ArrayList<>();
      if (n.isEmpty()) {
        problems.add("the effects cannot be counted from these answers");
      } else if (n.getAsLong() != 1) {
        problems.add(n.getAsLong() + " effects");
      }
      if (!retry.answered()) {
        problems.add("the retry got no answer (" + retry.error + ")");
      } else if (!retry.sameAs(lost)) {
        problems.add("the retry answered " + describe(retry) + " where the lost answer was " + describe(lost));
      }
      if (lost.replayed()) {
        problems.add("the first answer was marked Idempotent-Replayed: true although it was the first execution");
      }
      if (retry.header("Idempotent-Replayed").isPresent() && !retry.replayed()) {
        problems.add("the retry carries Idempotent-Replayed: " + retry.header("Idempotent-Replayed").get());
      }
      if (!problems.isEmpty()) {
        return run.result(Verdict.FAIL, n, String.join("; ", problems));
      }
      return run.result(Verdict.PASS, n, "the retry got the lost answer back (" + lost.status + ", same body, "
          + lost.shortIdentity() + ")" + (retry.replayed() ? ", marked Idempotent-Replayed: true"
          : ", not marked Idempotent-Replayed (the API may not send it)"));
    } catch (IOException e) {
      if (e instanceof ApiUnreachableException) {
        throw (ApiUnreachableException) e;
      }
      throw new Stop(Verdict.FAIL, "cannot start the fault proxy: " + e.getMessage());
    }
  }

  private CheckResult concurrentDuplicates(Run run) throws Stop, ApiUnreachableException, InterruptedException {
    int n = config.concurrency();
    String marker = marker();
    String body = config.render(marker, keyValue(), PLAIN_NUMBER);
    String key = key();
    Effects effects = new Effects(marker);
    ExecutorService pool = Executors.newFixedThreadPool(n, r -> {
      Thread t = new Thread(r, "idem-check-concurrent");
      t.setDaemon(true);
      return t;
    });
    List<Answer> answers = new ArrayList<>();
    try {
      CountDownLatch ready = new CountDownLatch(n);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Answer>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        futures.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          return exchange.send(config.target(), List.of(key), body);
        }));
      }
      ready.await();
      go.countDown();
      for (Future<Answer> f : futures) {
        try {
          answers.add(f.get());
        } catch (ExecutionException e) {
          if (e.getCause() instanceof ApiUnreachableException) {
            throw (ApiUnreachableException) e.getCause();
          }
          answers.add(Answer.failed(String.valueOf(e.getCause())));
        }
      }
    } finally {
      pool.shutdownNow();
    }
    for (Answer a : answers) {
      run.record(a, true);
    }
    OptionalLong counted = effects.after(answers);
    List<Answer> ok = answers.stream().filter(Answer::success).toList();
    List<String> problems = new ArrayList<>();
    if (counted.isEmpty()) {
      problems.add("the effects cannot be counted from these answers");
    } else if (counted.getAsLong() != 1) {
      problems.add(counted.getAsLong() + " effects from one key");
    }
    if (ok.isEmpty()) {
      problems.add("no attempt succeeded");
    } else if (ok.stream().anyMatch(a -> !a.sameAs(ok.get(0)))) {
      problems.add("the 2xx answers differ: " + ok.stream().map(Answer::shortIdentity).distinct()
          .collect(Collectors.joining(", ")));
    }
    Map<String, Integer> others = new LinkedHashMap<>();
    for (Answer a : answers) {
      if (a.success()) {
        continue;
      }
      if (a.status == 409 && a.header("Retry-After").isPresent()) {
        continue;
      }
      String what = !a.answered() ? "no answer (" + a.error + ")"
          : a.status == 409 ? "409 without Retry-After" : String.valueOf(a.status);
      others.merge(what, 1, Integer::sum);
    }
    others.forEach((what, count) -> problems.add(count + " x " + what));
    long replays = ok.stream().filter(Answer::replayed).count();
    long conflicts = answers.stream().filter(a -> a.status == 409).count();
    String summary = n + " attempts: " + ok.size() + " x " + (ok.isEmpty() ? "2xx" : ok.get(0).status)
        + (replays > 0 ? " (" + replays + " marked replayed)" : "") + (conflicts > 0 ? ", " + conflicts + " x 409" : "");
    if (!problems.isEmpty()) {
      return run.result(Verdict.FAIL, counted, summary + "; " + String.join("; ", problems));
    }
    return run.result(Verdict.PASS, counted, summary + "; every 2xx answer identical"
        + (conflicts > 0 ? ", every 409 with Retry-After" : ""));
  }

  private CheckResult keyReuse(Run run) throws Stop, ApiUnreachableException, InterruptedException {
    // the other content still contains the marker, so that one count (by marker, or in all) sees both
    // {{key-uuid}} stays the key's: only the content around the marker differs
    String marker = marker();
    String key = key();
    String keyValue = keyValue();
    Effects effects = new Effects(marker);
    Answer a = run.post(List.of(key), config.render(marker, keyValue, PLAIN_NUMBER));
    requireCreated(a);
    settle();
    Answer b = run.post(List.of(key), config.render(marker + "-other", keyValue, PLAIN_NUMBER));
    OptionalLong n = effects.after(run.answers);
    comparesContent = b.clientError();
    String effectsProblem = n.isPresent() && n.getAsLong() != 1 ? "; " + n.getAsLong() + " effects" : "";
    if (b.status == 422) {
      return effectsProblem.isEmpty()
          ? run.result(Verdict.PASS, n, "refused with 422")
          : run.result(Verdict.FAIL, n, "refused with 422" + effectsProblem);
    }
    if (b.clientError()) {
      return run.result(effectsProblem.isEmpty() ? Verdict.DEVIATION : Verdict.FAIL, n, "refused with " + b.status
          + ", where the IETF draft (section 2.7) says 422" + effectsProblem);
    }
    if (b.success() && b.sameAs(a)) {
      return run.result(Verdict.FAIL, n, "the first answer was replayed for different content: the API does not"
          + " compare the request content under a key, so a client bug that reuses a key loses the second"
          + " operation silently" + effectsProblem);
    }
    if (b.success()) {
      return run.result(Verdict.FAIL, n, "different content under a used key was run as a new operation ("
          + describe(b) + ")" + effectsProblem);
    }
    return run.result(Verdict.FAIL, n, "answered " + describe(b) + " instead of 422" + effectsProblem);
  }

  private CheckResult fingerprintReordered(Run run) throws Stop, ApiUnreachableException, InterruptedException {
    String marker = marker();
    String plain = config.render(marker, keyValue(), PLAIN_NUMBER);
    JsonNode parsed = Json.parse(plain);
    if (parsed == null) {
      throw new Stop(Verdict.SKIPPED, "not applicable: the body is not JSON");
    }
    boolean augmented = false;
    String body = plain;
    if (!Json.hasReorderableObject(parsed)) {
      if (!parsed.isObject()) {
        throw new Stop(Verdict.SKIPPED, "not applicable: the body has no object with two members to reorder");
      }
      body = Json.withNumberMember(parsed, NUMBER_MEMBER, PLAIN_NUMBER);
      augmented = true;
    }
    String variant = Json.reorderedAndRespaced(Json.parse(body));
    String key = key();
    Effects effects = new Effects(marker);
    Answer a = run.post(List.of(key), body);
    if (augmented && a.clientError()) {
      return run.result(Verdict.SKIPPED, OptionalLong.empty(), "not applicable: the body has one member, and the API"
          + " refused it with a second member \"" + NUMBER_MEMBER + "\" (" + describe(a) + ")");
    }
    requireCreated(a);
    settle();
    Answer b = run.post(List.of(key), variant);
    OptionalLong n = effects.after(run.answers);
    String what = augmented ? " (one member \"" + NUMBER_MEMBER + "\" added to have two to reorder)" : "";
    if (b.success() && b.sameAs(a) && n.isPresent() && n.getAsLong() == 1) {
      return run.result(Verdict.PASS, n, "members reordered and re-spaced: the first answer replayed" + what);
    }
    if (b.clientError()) {
      return run.result(Verdict.FAIL, n, "the same JSON with members reordered and re-spaced was refused with "
          + b.status + ": the API compares bytes, not JSON, so a client that serializes its body again on retry"
          + " is refused" + what);
    }
    return run.result(Verdict.FAIL, n, "the same JSON with members reordered and re-spaced was answered "
        + describe(b) + (n.isPresent() ? ", " + n.getAsLong() + " effects" : "") + what);
  }

  private CheckResult fingerprintBigNumber(Run run) throws Stop, ApiUnreachableException, InterruptedException {
    if (Boolean.FALSE.equals(comparesContent)) {
      throw new Stop(Verdict.SKIPPED, "not applicable: key-reuse shows that the API does not compare content at all");
    }
    String marker = marker();
    String one;
    String other;
    String keyValue = keyValue();
    boolean augmented = !config.hasNumberPlaceholder();
    if (augmented) {
      JsonNode parsed = Json.parse(config.render(marker, keyValue, PLAIN_NUMBER));
      if (parsed == null || !parsed.isObject()) {
        throw new Stop(Verdict.SKIPPED, "not applicable: the body is not a JSON object and has no {{number}} placeholder");
      }
      one = Json.withNumberMember(parsed, NUMBER_MEMBER, BIG_NUMBER);
      other = Json.withNumberMember(parsed, NUMBER_MEMBER, BIG_NUMBER_NEIGHBOUR);
    } else {
      one = config.render(marker, keyValue, BIG_NUMBER);
      other = config.render(marker, keyValue, BIG_NUMBER_NEIGHBOUR);
    }
    String key = key();
    Effects effects = new Effects(marker);
    Answer a = run.post(List.of(key), one);
    if (a.clientError()) {
      return run.result(Verdict.SKIPPED, OptionalLong.empty(), "not applicable: the API refused the body with "
          + BIG_NUMBER + (augmented ? " in an added member \"" + NUMBER_MEMBER + "\"" : "") + " (" + describe(a)
          + "); put {{number}} where the API takes a number");
    }
    requireCreated(a);
    settle();
    Answer b = run.post(List.of(key), other);
    OptionalLong n = effects.after(run.answers);
    String pair = BIG_NUMBER + " then " + BIG_NUMBER_NEIGHBOUR + " (the same double)";
    String effectsProblem = n.isPresent() && n.getAsLong() != 1 ? "; " + n.getAsLong() + " effects" : "";
    if (b.status == 422) {
      return run.result(effectsProblem.isEmpty() ? Verdict.PASS : Verdict.FAIL, n, pair + ": refused with 422"
          + effectsProblem);
    }
    if (b.clientError()) {
      return run.result(effectsProblem.isEmpty() ? Verdict.DEVIATION : Verdict.FAIL, n, pair + ": refused with "
          + b.status + ", where the IETF draft (section 2.7) says 422" + effectsProblem);
    }
    if (b.success() && b.sameAs(a)) {
      return run.result(Verdict.FAIL, n, pair + ": the first answer was replayed: the fingerprint compares numbers"
          + " as doubles, so two different requests count as the same one" + effectsProblem);
    }
    return run.result(Verdict.FAIL, n, pair + ": answered " + describe(b) + effectsProblem);
  }

  private CheckResult missingKey(Run run) throws ApiUnreachableException, InterruptedException {
    Answer a = run.post(List.of(), config.render(marker(), keyValue(), PLAIN_NUMBER));
    if (a.status == 400) {
      return run.result(Verdict.PASS, OptionalLong.empty(), "refused with 400");
    }
    if (a.success()) {
      return run.result(Verdict.WARNING, OptionalLong.empty(), "accepted without a key (" + a.status + "): keys are"
          + " optional on this route, so a client that forgets one is not protected; the draft's 400 applies where a"
          + " key is required");
    }
    if (a.clientError()) {
      return run.result(Verdict.WARNING, OptionalLong.empty(), "refused with " + a.status
          + ", where the IETF draft (section 2.7) says 400");
    }
    return run.result(Verdict.FAIL, OptionalLong.empty(), "answered " + describe(a));
  }

  private CheckResult malformedKey(Run run) throws ApiUnreachableException, InterruptedException {
    Map<String, Answer> seen = new LinkedHashMap<>();
    seen.put("an empty key", run.post(List.of(""), config.render(marker(), keyValue(), PLAIN_NUMBER)));
    seen.put("a key with an unmatched quote", run.post(List.of("\"" + key()), config.render(marker(), keyValue(), PLAIN_NUMBER)));
    return refusals(run, seen);
  }

  private CheckResult secondKeyField(Run run) throws ApiUnreachableException, InterruptedException {
    Map<String, Answer> seen = new LinkedHashMap<>();
    seen.put("two Idempotency-Key fields", run.post(List.of(key(), key()), config.render(marker(), keyValue(), PLAIN_NUMBER)));
    return refusals(run, seen);
  }

  /** 400 for each: pass; another 4xx: deviation; anything else: fail. */
  private CheckResult refusals(Run run, Map<String, Answer> seen) {
    List<String> failed = new ArrayList<>();
    List<String> deviations = new ArrayList<>();
    seen.forEach((what, a) -> {
      if (a.status == 400) {
        return;
      }
      if (a.clientError()) {
        deviations.add(what + ": " + a.status);
      } else {
        failed.add(what + ": " + (a.success() ? "accepted, " : "") + describe(a));
      }
    });
    if (!failed.isEmpty()) {
      return run.result(Verdict.FAIL, OptionalLong.empty(), String.join("; ", failed));
    }
    if (!deviations.isEmpty()) {
      return run.result(Verdict.DEVIATION, OptionalLong.empty(), "refused, with another status than the draft's 400: "
          + String.join("; ", deviations));
    }
    return run.result(Verdict.PASS, OptionalLong.empty(), "refused with 400: " + String.join(", ", seen.keySet()));
  }

  private CheckResult problemDetails(Run run) {
    List<Answer> errors;
    synchronized (errorAnswers) {
      errors = new ArrayList<>(errorAnswers);
    }
    if (errors.isEmpty()) {
      return run.result(Verdict.SKIPPED, OptionalLong.empty(), "no error answers to look at");
    }
    Map<String, Integer> other = new LinkedHashMap<>();
    for (Answer a : errors) {
      if (!a.mediaType().equals("application/problem+json")) {
        other.merge(a.status + " as " + (a.mediaType().isEmpty() ? "no Content-Type" : a.mediaType()), 1, Integer::sum);
      }
    }
    String statuses = errors.stream().map(a -> String.valueOf(a.status)).distinct().collect(Collectors.joining(", "));
    if (other.isEmpty()) {
      return run.result(Verdict.PASS, OptionalLong.empty(), errors.size() + " error answers (" + statuses
          + "), all application/problem+json");
    }
    return run.result(Verdict.WARNING, OptionalLong.empty(), "not application/problem+json: " + other.entrySet().stream()
        .map(e -> e.getValue() + " x " + e.getKey()).collect(Collectors.joining(", ")));
  }

  // ---- helpers ----

  private static void requireCreated(Answer a) throws Stop {
    if (!a.success()) {
      throw new Stop(Verdict.FAIL, "the first request was answered " + describe(a));
    }
  }

  private void settle() throws InterruptedException {
    if (!config.settle().isZero()) {
      TimeUnit.NANOSECONDS.sleep(config.settle().toNanos());
    }
  }

  private static long retryAfterSeconds(Answer a) {
    try {
      long s = Long.parseLong(a.header("Retry-After").orElse("1").trim());
      return Math.max(0, Math.min(s, MAX_RETRY_AFTER_SECONDS));
    } catch (NumberFormatException e) {
      return 1;
    }
  }

  static String describe(Answer a) {
    if (!a.answered()) {
      return "no answer (" + a.error + ")";
    }
    String excerpt = a.excerpt(80);
    return a.status + (excerpt.isEmpty() ? "" : " " + excerpt);
  }

  private static String marker() {
    return UUID.randomUUID().toString();
  }

  /** @return a fresh value for {@code {{key-uuid}}}: one per key, shared by every request with that key */
  private static String keyValue() {
    return UUID.randomUUID().toString();
  }

  private static String key() {
    return "idem-check-" + UUID.randomUUID();
  }
}
