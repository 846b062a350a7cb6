package dev.idem.core;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.internal.MediaType;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@link Fingerprint#request()}: what of an HTTP request its fingerprint covers. */
class RequestFingerprintTest {

  private static final String CANONICAL = "{\"title\":\"a\"}";
  private static final String SPACED = " { \"title\" : \"a\" } ";

  private static Fingerprint body(String contentType, String body) {
    return Fingerprint.request()
        .method("POST")
        .target("/notes")
        .contentType(contentType)
        .body(body.getBytes(UTF_8))
        .build();
  }

  private static Fingerprint target(String target) {
    return Fingerprint.request()
        .method("POST")
        .target(target)
        .contentType("application/json")
        .body("{}".getBytes(UTF_8))
        .build();
  }

  private static Fingerprint encoded(String contentEncoding, String body) {
    return Fingerprint.request()
        .method("POST")
        .target("/notes")
        .contentType("application/json")
        .contentEncoding(contentEncoding)
        .body(body.getBytes(UTF_8))
        .build();
  }

  @Test
  void sameBytesAsJsonThenTextPlainAreDifferentFingerprints() {
    assertThat(body("text/plain", CANONICAL)).isNotEqualTo(body("application/json", CANONICAL));
    assertThat(body("text/plain", SPACED)).isNotEqualTo(body("application/json", SPACED));
    assertThat(body("application/json", SPACED)).isEqualTo(body("application/json", CANONICAL));
    assertThat(body("text/plain", SPACED)).isNotEqualTo(body("text/plain", CANONICAL));
  }

  @Test
  void aMissingContentTypeIsNotJson() {
    assertThat(body(null, CANONICAL))
        .isNotEqualTo(body("application/json", CANONICAL))
        .isNotEqualTo(body("", CANONICAL))
        .isNotEqualTo(body("application/octet-stream", CANONICAL));
    assertThat(body(null, SPACED)).isNotEqualTo(body(null, CANONICAL));
    assertThat(body(null, "")).isNotEqualTo(body("application/json", ""));
  }

  @Test
  void spellingsOfTheJsonMediaTypeAreEqual() {
    Fingerprint json = body("application/json", CANONICAL);
    for (String type :
        List.of(
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=UTF-8",
            " application/json ; charset=\"utf-8\" ",
            "application/json;\tCharset=Utf-8",
            "application/json;",
            "application/json; ; charset=utf-8")) {
      assertThat(body(type, SPACED)).as(type).isEqualTo(json);
    }
  }

  @Test
  void otherCharsetsOfJsonAreKeptAndTheBytesCompared() {
    // a receiver may decode these bytes differently: compared as bytes, never canonicalized
    Fingerprint latin1 = body("application/json; charset=iso-8859-1", CANONICAL);
    assertThat(latin1).isNotEqualTo(body("application/json", CANONICAL));
    assertThat(body("application/json; charset=ISO-8859-1", CANONICAL)).isEqualTo(latin1);
    assertThat(body("application/json; charset=iso-8859-1", SPACED)).isNotEqualTo(latin1);
    assertThat(body("application/json; charset=utf8", "{")).isNotNull(); // not parsed
  }

  @Test
  void jsonSuffixTypesAreJsonButNotEachOther() {
    assertThat(body("application/merge-patch+json", SPACED))
        .isEqualTo(body("application/merge-patch+json", CANONICAL))
        .isNotEqualTo(body("application/json", CANONICAL));
    assertThat(body("application/vnd.api+json; ext=bulk", CANONICAL))
        .isNotEqualTo(body("application/vnd.api+json", CANONICAL));
    assertThatThrownBy(() -> body("application/problem+json", "{"))
        .isInstanceOf(InvalidPayloadException.class)
        .hasMessageStartingWith("invalid JSON at byte 1");
  }

  @Test
  void mediaTypeParametersAreNormalisedButTheirValuesKeepTheirCase() {
    assertThat(body("text/plain; charset=UTF-8", "x"))
        .isEqualTo(body("TEXT/PLAIN;CHARSET=\"utf-8\"", "x"))
        .isNotEqualTo(body("text/plain", "x"))
        .isNotEqualTo(body("text/plain; charset=us-ascii", "x"));
    assertThat(body("text/plain; a=1; b=2", "x")).isEqualTo(body("text/plain;B=2;A=1", "x"));
    assertThat(body("multipart/form-data; boundary=AbC", "x"))
        .isNotEqualTo(body("multipart/form-data; boundary=abc", "x"))
        .isEqualTo(body("multipart/form-data; boundary=\"AbC\"", "x"));
    assertThat(body("text/plain; a=\"x y\"", "x")).isNotEqualTo(body("text/plain; a=\"x  y\"", "x"));
  }

  @Test
  void unparseableMediaTypesAreComparedAsSent() {
    assertThat(body("application/json; charset", "{")).isNotEqualTo(body("application/json", "{}"));
    assertThat(body("application/json; charset", "x")).isNotEqualTo(body("application/json;  charset", "x"));
    assertThat(body("text/plain; charset=utf-8; charset=latin1", "x"))
        .isNotEqualTo(body("text/plain; charset=utf-8", "x"))
        .isNotEqualTo(body("text/plain; charset=latin1", "x"));
    assertThat(body("json", "x")).isNotEqualTo(body("JSON", "x"));
  }

  @Test
  void contentCodingIsPartOfTheRequest() {
    assertThat(encoded("gzip", "{}")).isNotEqualTo(encoded(null, "{}"));
    assertThat(encoded("GZIP", "{}")).isEqualTo(encoded("gzip", "{}"));
    assertThat(encoded("gzip, br", "{}"))
        .isEqualTo(encoded("gzip,br", "{}"))
        .isEqualTo(encoded("gzip,\tbr,", "{}"))
        .isNotEqualTo(encoded("br, gzip", "{}"));
    assertThat(encoded(" , ", "{}")).isEqualTo(encoded(null, "{}"));
    // an encoded body is not JSON text: compared as bytes, never parsed
    assertThat(encoded("gzip", "\u001f\u008b not json")).isNotNull();
    assertThat(encoded("gzip", SPACED)).isNotEqualTo(encoded("gzip", CANONICAL));
  }

  @Test
  void theTargetIsComparedAsSent() {
    List<String> targets =
        List.of(
            "/notes",
            "/notes?",
            "/notes?a=1&b=2",
            "/notes?b=2&a=1",
            "/notes?q=a+b",
            "/notes?q=a%20b",
            "/notes?q=a%2f",
            "/notes?q=a%2F",
            "/notes?a=1&a=1",
            "/notes/a%2Fb",
            "/notes/a/b",
            "/notes/x%3Fa=1",
            "/notes/x?a=1",
            "/Notes");
    Set<Fingerprint> seen = new HashSet<>();
    for (String t : targets) {
      assertThat(seen.add(target(t))).as(t).isTrue();
    }
    assertThat(target("/notes?a=1")).isEqualTo(target("/notes?a=1"));
  }

  @Test
  void theMethodIsPartOfTheRequest() {
    Fingerprint post = Fingerprint.request().method("POST").target("/x").build();
    assertThat(Fingerprint.request().method("PUT").target("/x").build()).isNotEqualTo(post);
    assertThat(Fingerprint.request().method("post").target("/x").build()).isNotEqualTo(post);
    assertThat(Fingerprint.request().target("/x").build()).isNotEqualTo(post);
  }

  @Test
  void partsDoNotRunIntoEachOther() {
    Set<Fingerprint> seen = new HashSet<>();
    seen.add(Fingerprint.request().method("POST").target("/x").build());
    seen.add(Fingerprint.request().method("POS").target("T/x").build());
    seen.add(Fingerprint.request().method("POST/x").build());
    seen.add(Fingerprint.request().target("POST/x").build());
    seen.add(Fingerprint.request().method("POST").target("/x").contentType("a/b").build());
    seen.add(Fingerprint.request().method("POST").target("/x").contentEncoding("a/b").build());
    seen.add(Fingerprint.request().method("POST").target("/x").body("a/b".getBytes(UTF_8)).build());
    seen.add(Fingerprint.request().method("\ud800").build());
    seen.add(Fingerprint.request().method("\udc00").build());
    seen.add(Fingerprint.request().method("\ufffd").build());
    assertThat(seen).hasSize(10);
  }

  @Test
  void anEmptyBodyIsNeverParsed() {
    assertThat(body("application/json", "")).isEqualTo(body("application/json; charset=utf-8", ""));
    assertThat(body("application/json", "")).isNotEqualTo(body("text/plain", ""));
    assertThat(Fingerprint.request().build()).isEqualTo(Fingerprint.request().body(new byte[0]).build());
  }

  @Test
  void theRequestFingerprintIsStable() {
    // Stores keep fingerprints for the retention period: the digest input must not drift.
    assertThat(body("application/json; charset=UTF-8", SPACED).hex())
        .isEqualTo(STABLE_JSON);
    assertThat(Fingerprint.of("text/plain", "x".getBytes(UTF_8)))
        .isEqualTo(Fingerprint.request().contentType("text/plain").body("x".getBytes(UTF_8)).build());
  }

  private static final String STABLE_JSON = "6b3f36a6497bcc29271c7659f573764f34fbe31dd18ae8e7cff40bf972950423";

  @Test
  void mediaTypeCanonicalForm() {
    assertThat(MediaType.parse(" Application/Vnd.API+JSON ; Ext=\"bulk\" ;charset=UTF-8").canonical())
        .isEqualTo("application/vnd.api+json;ext=bulk");
    assertThat(MediaType.parse("text/plain; Charset=UTF-8; Format=Flowed").canonical())
        .isEqualTo("text/plain;charset=utf-8;format=Flowed");
    assertThat(MediaType.parse("text/plain; title=\"a \\\"b\\\" c\"").canonical())
        .isEqualTo("text/plain;title=\"a \\\"b\\\" c\"");
    assertThat(MediaType.parse("application/json; charset=latin1").isUtf8Json()).isFalse();
    assertThat(MediaType.parse("application/json; charset=utf-8").isUtf8Json()).isTrue();
    for (String bad :
        List.of(
            "",
            "json",
            "/json",
            "application/",
            "application/json; charset",
            "application/json; =utf-8",
            "application/json charset=utf-8",
            "text/plain; a=\"unterminated",
            "text/plain; a=1; A=2",
            "text/pl\u00e4in")) {
      assertThat(MediaType.parse(bad)).as(bad).isNull();
    }
    assertThat(MediaType.parse(null)).isNull();
  }

  @Test
  void aBodyGivenByItsParsedDigestNeverEqualsABodyGivenAsThoseBytes() {
    Fingerprint parts = Fingerprint.ofBytes("name=a;file=x.txt;sha256=...".getBytes(UTF_8));
    Fingerprint parsed = Fingerprint.request().method("POST").target("/upload")
        .contentType("multipart/form-data; boundary=b1").parsedBody(parts).build();
    Fingerprint sameDigestAsBytes = Fingerprint.request().method("POST").target("/upload")
        .contentType("multipart/form-data; boundary=b1").body(parts.bytes()).build();
    Fingerprint again = Fingerprint.request().method("POST").target("/upload")
        .contentType("multipart/form-data; boundary=b1").parsedBody(parts).build();
    assertThat(parsed).isEqualTo(again).isNotEqualTo(sameDigestAsBytes);
  }

  /**
   * The digest input of every part, written field by field before and into one array now, is the
   * same: these values were computed with the field-by-field encoding.
   */
  @Test
  void requestFingerprintsAreUnchangedByTheOneArrayEncoding() {
    byte[] json = "{ \"b\": [1.0, \"\\u00e9\"], \"a\": null }".getBytes(UTF_8);
    assertThat(
            Fingerprint.request().method("PUT").target("/notes/7?x=1&y=%2F")
                .contentType("Application/JSON; charset=\"UTF-8\"").body(json).build().hex())
        .isEqualTo("ad8eaef949e92ecde35b939bfaea8f139839266c39621eba0f03a68d9073e85c");
    assertThat(
            Fingerprint.request().method("POST").target("/upload").contentType("text/plain")
                .contentEncoding("GZIP, ,br").body(json).build().hex())
        .isEqualTo("411293c30c086042462c993132e29943b5cd115515d18d89d31f471fb735d7da");
    assertThat(
            Fingerprint.request().method("POST").target("/f\uD800").contentType("not a media type")
                .body(json).build().hex())
        .isEqualTo("191b7a9d7b8638c617883176097ce873218e71b192d3054cf701c885765a8494");
    assertThat(
            Fingerprint.request().method("POST").contentType("multipart/form-data; boundary=x")
                .parsedBody(Fingerprint.ofBytes(json)).build().hex())
        .isEqualTo("c0e0a9a04536e00e0faf0a6976b872dbea25beb560308d3bc4ff9692e86da32a");
    assertThat(Fingerprint.request().build().hex())
        .isEqualTo("72a464726fc4b83f35ac392a70a53109b1e9a78df9b815d261c369f3c1347f4c");
    assertThat(Fingerprint.ofJson(json).hex())
        .isEqualTo("f8f17faab95c024891d173fa43442b0e52007736a1f36715ac721ab22deeefc5");
  }

  /** The last Content-Type value parsed is reused only for an equal value. */
  @Test
  void alternatingContentTypesKeepTheirOwnFingerprints() {
    byte[] body = "{\"a\": 1}".getBytes(UTF_8);
    List<String> types =
        List.of("application/json", "text/plain", "application/json", "Application/Json",
            "not a media type", "text/plain", "application/json;charset=latin1", "application/json");
    List<Fingerprint> first = new ArrayList<>();
    for (String type : types) {
      first.add(Fingerprint.request().method("POST").contentType(type).body(body).build());
    }
    for (int i = types.size() - 1; i >= 0; i--) {
      assertThat(Fingerprint.request().method("POST").contentType(types.get(i)).body(body).build())
          .as(types.get(i))
          .isEqualTo(first.get(i));
    }
    assertThat(first.get(0)).isEqualTo(first.get(2)).isEqualTo(first.get(3))
        .isNotEqualTo(first.get(1)).isNotEqualTo(first.get(6));
    assertThat(first.get(1)).isEqualTo(first.get(5)).isNotEqualTo(first.get(4));
  }
}
