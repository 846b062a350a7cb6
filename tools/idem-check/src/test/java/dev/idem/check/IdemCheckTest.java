package dev.idem.check;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.w3c.dom.Document;

/**
 * The checks against {@link ToyApi}: correct, and broken in one way each. Every broken API must be
 * caught by the check that should catch it and by no other.
 */
@Timeout(120)
class IdemCheckTest {

  private static final String BODY = "{\"title\":\"check-{{uuid}}\"}";
  /** The toy stores keys at once (except KEY_STORED_AFTER_EFFECT): no need to wait long. */
  private static final Duration SHORT_SETTLE = Duration.ofMillis(100);

  private static IdemCheck.Builder check(ToyApi api) {
    return IdemCheck.builder(api.items()).body(BODY).settle(SHORT_SETTLE);
  }

  private static Set<CheckName> failed(CheckReport report) {
    return report.failures().stream().map(CheckResult::name).collect(Collectors.toSet());
  }

  private static Map<CheckName, Verdict> verdicts(CheckReport report) {
    return report.results().stream().collect(Collectors.toMap(CheckResult::name, CheckResult::verdict));
  }

  @Test
  void aCorrectApiPassesEveryCheckCountedThroughItsListing() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NONE)) {
      CheckReport report = check(api).countUrl(api.items()).build().run();

      assertThat(report.results()).extracting(CheckResult::verdict).as(report.toTable()).containsOnly(Verdict.PASS);
      assertThat(report.exitStatus()).isZero();
      assertThat(report.countingIsReal()).isTrue();
      assertThat(report.result(CheckName.CONTROL).effects()).hasValue(2);
      assertThat(report.result(CheckName.LOST_RESPONSE).effects()).hasValue(1);
      assertThat(report.result(CheckName.LOST_RESPONSE).answers()).isEqualTo("201 (lost), 201 replayed");
      assertThat(report.result(CheckName.CONCURRENT_DUPLICATES).effects()).hasValue(1);
      assertThat(report.result(CheckName.CONCURRENT_DUPLICATES).sends()).isEqualTo(8);
      assertThat(report.result(CheckName.KEY_REUSE).answers()).isEqualTo("201, 422");
      assertThat(report.requestsSent() + report.countQueries()).isLessThanOrEqualTo(report.requestBound());
      assertThat(report.toTable()).contains("through GET " + api.items()).contains("result: every required check passed");
    }
  }

  @Test
  void aCorrectApiPassesCountedFromItsAnswersAndTheReportSaysThatProvesLess() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NONE)) {
      CheckReport report = check(api).concurrency(4).build().run();

      assertThat(report.passed()).as(report.toTable()).isTrue();
      assertThat(report.countingIsReal()).isFalse();
      assertThat(report.result(CheckName.CONTROL).effects()).hasValue(2);
      assertThat(report.result(CheckName.LOST_RESPONSE).effects()).hasValue(1);
      assertThat(report.countQueries()).isZero();
      assertThat(report.requestBound()).isEqualTo(4 + Checks.SENDS_BESIDES_CONCURRENT);
      assertThat(report.toTable()).contains("effects counted from the answers").contains("proves less");
    }
  }

  @Test
  void noFingerprintIsCaughtByKeyReuseAndByNoOtherCheck() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NO_FINGERPRINT)) {
      CheckReport report = check(api).countUrl(api.items()).build().run();

      assertThat(failed(report)).as(report.toTable()).containsExactly(CheckName.KEY_REUSE);
      assertThat(report.result(CheckName.KEY_REUSE).detail()).contains("does not compare the request content");
      assertThat(report.result(CheckName.KEY_REUSE).effects()).hasValue(1);
      // the same fault, reported once: the big-number check does not apply to an API that compares nothing
      assertThat(report.result(CheckName.FINGERPRINT_BIG_NUMBER).verdict()).isEqualTo(Verdict.SKIPPED);
      assertThat(report.exitStatus()).isEqualTo(1);
    }
  }

  @Test
  void checkThenInsertIsCaughtByConcurrentDuplicatesAndByNoOtherCheck() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.CHECK_THEN_INSERT)) {
      CheckReport report = check(api).countUrl(api.items()).build().run();

      assertThat(failed(report)).as(report.toTable()).containsExactly(CheckName.CONCURRENT_DUPLICATES);
      assertThat(report.result(CheckName.CONCURRENT_DUPLICATES).effects()).isPresent();
      assertThat(report.result(CheckName.CONCURRENT_DUPLICATES).effects().getAsLong()).isGreaterThan(1);
      assertThat(report.result(CheckName.CONCURRENT_DUPLICATES).detail()).contains("effects from one key");
      assertThat(verdicts(report).values()).containsOnly(Verdict.PASS, Verdict.FAIL);
    }
  }

  @Test
  void aKeyStoredAfterTheEffectIsCaughtByLostResponseAndByNoOtherCheck() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.KEY_STORED_AFTER_EFFECT)) {
      // the sequential checks wait until the late key is stored; the retry after the loss does not
      CheckReport report = check(api).countUrl(api.items()).settle(ToyApi.KEY_STORE_LAG.multipliedBy(2)).build().run();

      assertThat(failed(report)).as(report.toTable()).containsExactly(CheckName.LOST_RESPONSE);
      assertThat(report.result(CheckName.LOST_RESPONSE).effects()).hasValue(2);
      assertThat(report.result(CheckName.LOST_RESPONSE).detail()).startsWith("2 effects");
      assertThat(verdicts(report).values()).containsOnly(Verdict.PASS, Verdict.FAIL);
    }
  }

  @Test
  void anApiWithoutIdempotencyFailsLostResponseAndConcurrencyWithTheEffectsCounted() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NO_IDEMPOTENCY)) {
      CheckReport report = check(api).build().run();

      assertThat(report.result(CheckName.CONTROL).verdict()).as(report.toTable()).isEqualTo(Verdict.PASS);
      assertThat(report.result(CheckName.LOST_RESPONSE).verdict()).isEqualTo(Verdict.FAIL);
      assertThat(report.result(CheckName.LOST_RESPONSE).effects()).hasValue(2);
      assertThat(report.result(CheckName.CONCURRENT_DUPLICATES).verdict()).isEqualTo(Verdict.FAIL);
      assertThat(report.result(CheckName.CONCURRENT_DUPLICATES).effects()).hasValue(8);
      assertThat(report.result(CheckName.MISSING_KEY).verdict()).isEqualTo(Verdict.WARNING);
      assertThat(report.exitStatus()).isEqualTo(1);
      assertThat(api.effects()).isLessThanOrEqualTo(report.requestsSent());
    }
  }

  @Test
  void answersWithoutIdsMakeTheControlBlindAndTheReportSaysSo() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NO_IDS)) {
      CheckReport report = check(api).build().run();

      CheckResult control = report.result(CheckName.CONTROL);
      assertThat(control.verdict()).isEqualTo(Verdict.FAIL);
      assertThat(control.detail()).startsWith("BLIND");
      assertThat(report.toTable()).contains("the counting is BLIND");
      assertThat(report.exitStatus()).isEqualTo(1);
    }
  }

  /** An order whose number the API keeps UNIQUE: one number per key, the marker in the note. */
  private static final String ORDER = "{\"number\":\"{{key-uuid}}\",\"note\":\"check-{{uuid}}\"}";

  @Test
  void anApiWithAUniqueOrderNumberPassesEveryCheckWhenTheNumberIsTheKeys() throws Exception {
    try (ToyApi api = ToyApi.withUniqueMember("number")) {
      CheckReport report = IdemCheck.builder(api.items()).body(ORDER).settle(SHORT_SETTLE).countUrl(api.items())
          .build().run();

      assertThat(report.results()).extracting(CheckResult::verdict).as(report.toTable()).containsOnly(Verdict.PASS);
      assertThat(report.exitStatus()).isZero();
      assertThat(report.result(CheckName.CONTROL).answers()).isEqualTo("201 x2");
      assertThat(report.result(CheckName.CONTROL).effects()).hasValue(2);

      Map<String, List<String>> bodiesByKey = api.received().stream().filter(r -> r.key() != null)
          .collect(Collectors.groupingBy(ToyApi.Received::key, Collectors.mapping(ToyApi.Received::body, Collectors.toList())));
      // one number per key, every key its own
      Map<String, Set<String>> numbersByKey = bodiesByKey.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey,
          e -> e.getValue().stream().map(b -> Json.parse(b).get("number").asText()).collect(Collectors.toSet())));
      assertThat(numbersByKey.values()).allSatisfy(numbers -> assertThat(numbers).hasSize(1));
      assertThat(numbersByKey.values().stream().flatMap(Set::stream).distinct().count()).isEqualTo(numbersByKey.size());
      // the concurrent duplicates of one key sent the same bytes
      assertThat(bodiesByKey.values()).filteredOn(bodies -> bodies.size() == 8).singleElement()
          .satisfies(bodies -> assertThat(Set.copyOf(bodies)).hasSize(1));
    }
  }

  @Test
  void anApiWithAUniqueOrderNumberLeavesTheControlBlindWhenTheNumberIsTheChecks() throws Exception {
    try (ToyApi api = ToyApi.withUniqueMember("number")) {
      // {{uuid}} is one value per check: the control's two keys send the same number, and the API refuses the second
      CheckReport report = IdemCheck.builder(api.items()).body("{\"number\":\"{{uuid}}\",\"note\":\"check\"}")
          .settle(SHORT_SETTLE).countUrl(api.items()).build().run();

      CheckResult control = report.result(CheckName.CONTROL);
      assertThat(control.verdict()).as(report.toTable()).isEqualTo(Verdict.FAIL);
      assertThat(control.answers()).isEqualTo("201, 409");
      assertThat(control.effects()).hasValue(1);
      assertThat(control.detail()).startsWith("BLIND: the second request, under another key, was answered 409")
          .contains("put {{key-uuid}} in it");
      assertThat(report.exitStatus()).isEqualTo(1);
    }
  }

  @Test
  void aCountThatSeesNoEffectFailsTheControl() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NONE)) {
      CheckReport report = check(api).countUrl(api.empty()).build().run();

      assertThat(report.result(CheckName.CONTROL).verdict()).isEqualTo(Verdict.FAIL);
      assertThat(report.result(CheckName.CONTROL).effects()).hasValue(0);
      assertThat(report.result(CheckName.CONTROL).detail()).contains("counted as 0 effects, not 2");
    }
  }

  @Test
  void aCountFunctionOfTheCallerIsUsedBeforeAndAfterEachCheck() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NONE)) {
      CheckReport report = check(api).countWith("items in the toy, all of them", marker -> api.effects()).build().run();

      assertThat(report.passed()).as(report.toTable()).isTrue();
      assertThat(report.counting()).isEqualTo("items in the toy, all of them");
      assertThat(report.countQueries()).isEqualTo(Checks.COUNT_QUERIES);
    }
  }

  @Test
  void anUnreachableApiIsReportedAsSuchBeforeAnyCheck() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    IdemCheck check = IdemCheck.builder(URI.create("http://127.0.0.1:" + port + "/items")).body(BODY).build();

    assertThatThrownBy(check::run).isInstanceOf(ApiUnreachableException.class).hasMessageContaining("cannot reach");
  }

  @Test
  void aCreateRequestThatFailsSkipsTheOtherChecks() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NONE)) {
      CheckReport report = IdemCheck.builder(api.items()).body("[\"{{uuid}}\"]").build().run();

      assertThat(report.result(CheckName.CONTROL).detail()).startsWith("the create request was answered 400");
      assertThat(report.results()).filteredOn(r -> r.name() != CheckName.CONTROL)
          .extracting(CheckResult::verdict).containsOnly(Verdict.SKIPPED);
      assertThat(report.exitStatus()).isEqualTo(1);
    }
  }

  @Test
  void theReportIsJsonAndJUnitXml() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NO_FINGERPRINT)) {
      CheckReport report = check(api).countUrl(api.items()).build().run();

      JsonNode json = new ObjectMapper().readTree(report.toJson());
      assertThat(json.get("exitStatus").asInt()).isEqualTo(1);
      assertThat(json.get("counting").get("real").asBoolean()).isTrue();
      assertThat(json.get("checks")).hasSize(CheckName.values().length);
      assertThat(json.get("checks").get(3).get("check").asText()).isEqualTo("key-reuse");
      assertThat(json.get("checks").get(3).get("verdict").asText()).isEqualTo("fail");

      Document xml = DocumentBuilderFactory.newInstance().newDocumentBuilder()
          .parse(new ByteArrayInputStream(report.toJUnitXml().getBytes(StandardCharsets.UTF_8)));
      assertThat(xml.getDocumentElement().getAttribute("tests")).isEqualTo(String.valueOf(CheckName.values().length));
      assertThat(xml.getDocumentElement().getAttribute("failures")).isEqualTo("1");
      assertThat(xml.getDocumentElement().getAttribute("skipped")).isEqualTo("1");
      assertThat(xml.getElementsByTagName("testcase").getLength()).isEqualTo(CheckName.values().length);
      assertThat(xml.getElementsByTagName("failure").item(0).getParentNode().getAttributes()
          .getNamedItem("name").getNodeValue()).isEqualTo("key-reuse");
    }
  }

  @Test
  void theBuilderRefusesWhatCannotBeChecked() {
    URI url = URI.create("http://127.0.0.1:8080/notes");
    assertThatThrownBy(() -> IdemCheck.builder(url).body("{\"title\":\"fixed\"}"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("{{uuid}}");
    assertThatThrownBy(() -> IdemCheck.builder(url).body("{\"number\":\"{{key-uuid}}\"}"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("{{key-uuid}} changes with the key");
    assertThatThrownBy(() -> IdemCheck.builder(url).header("Idempotency-Key", "x"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> IdemCheck.builder(url).header("Host", "example.com"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> IdemCheck.builder(url).concurrency(1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> IdemCheck.builder(URI.create("ftp://h/x"))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> IdemCheck.builder(url).build()).isInstanceOf(IllegalStateException.class);
    assertThat(IdemCheck.redact("jdbc:postgresql://h/db?user=a&password=secret")).doesNotContain("secret");
  }
}
