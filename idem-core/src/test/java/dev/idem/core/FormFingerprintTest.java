package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * {@code application/x-www-form-urlencoded} bodies are fingerprinted as their decoded fields sorted
 * by name (stably), never so that two different forms compare equal.
 */
class FormFingerprintTest {

  private static final String FORM = "application/x-www-form-urlencoded";

  private static Fingerprint form(String body) {
    return Fingerprint.of(FORM, body.getBytes(StandardCharsets.ISO_8859_1));
  }

  @Test
  void reorderedFormFieldsAreTheSameRequest() {
    assertThat(form("b=2&a=1")).isEqualTo(form("a=1&b=2"));
    assertThat(form("title=Hello+W%C3%B6rld&x=1")).isEqualTo(form("x=1&title=Hello+W%C3%B6rld"));
    assertThat(form("a=1&b=2&a=3")).isEqualTo(form("b=2&a=1&a=3")).isEqualTo(form("a=1&a=3&b=2"));
    assertThat(Fingerprint.of(FORM + "; charset=UTF-8", "b=2&a=1".getBytes(StandardCharsets.US_ASCII)))
        .isEqualTo(Fingerprint.of(FORM + ";charset=utf-8", "a=1&b=2".getBytes(StandardCharsets.US_ASCII)));
  }

  @Test
  void repeatedNamesInAnotherRelativeOrderDiffer() {
    assertThat(form("a=1&b=2&a=3")).isNotEqualTo(form("a=3&b=2&a=1"));
    assertThat(form("a=1&a=3")).isNotEqualTo(form("a=3&a=1"));
  }

  @Test
  void encodingsThatDecodeEqualAreEqualAndThoseThatDecodeDifferentDiffer() {
    assertThat(form("a=%20")).isEqualTo(form("a=+"));
    assertThat(form("a=%C3%B6")).isEqualTo(form("a=%c3%b6")); // hex digits in either case
    assertThat(form("%61=1")).isEqualTo(form("a=1")); // names are decoded too
    assertThat(form("a=%2B")).isNotEqualTo(form("a=+")); // a plus sign, not a space
    assertThat(form("a=%2B")).isNotEqualTo(form("a=%20"));
    assertThat(form("a=1")).isNotEqualTo(form("a=2"));
    assertThat(form("a")).isNotEqualTo(form("a=")); // no value is not an empty value
    assertThat(form("a=1&b=2")).isNotEqualTo(form("a=1&b=2&"));
    assertThat(form("a=1")).isNotEqualTo(form("A=1"));
  }

  @Test
  void anEncodedDelimiterNeverReadsAsOne() {
    assertThat(form("a=1&b=2")).isNotEqualTo(form("a=1%26b%3D2"));
    assertThat(form("a=1&b=2")).isNotEqualTo(form("a%3D1&b=2"));
    assertThat(form("a=b=c")).isNotEqualTo(form("a%3Db=c"));
    assertThat(form("a=b=c")).isEqualTo(form("a=b%3Dc")); // only the first = splits a field
  }

  @Test
  void invalidPercentEncodingFallsBackToRawBytesDistinctly() {
    // not canonicalized: the raw bytes, so a reordering is a different request ...
    assertThat(form("a=%G1&b=2")).isNotEqualTo(form("b=2&a=%G1"));
    assertThat(form("a=%4")).isEqualTo(form("a=%4")).isNotEqualTo(form("a=%40"));
    assertThat(form("a=1&b=%")).isNotEqualTo(form("b=%&a=1"));
    // ... and never equal to a canonicalized form, nor to the same bytes as another media type
    assertThat(form("a=%G1")).isNotEqualTo(Fingerprint.of("text/plain", "a=%G1".getBytes(StandardCharsets.US_ASCII)));
  }

  @Test
  void aCanonicalFormNeverEqualsTheRawBytesOfAnotherBody() {
    // the canonical bytes of one form, sent raw as another form that does not canonicalize, differ
    assertThat(form("a=1")).isNotEqualTo(Fingerprint.of("application/octet-stream", "a=1".getBytes(StandardCharsets.US_ASCII)));
    assertThat(form("a=1")).isNotEqualTo(Fingerprint.of(FORM + "; charset=utf-16", "a=1".getBytes(StandardCharsets.US_ASCII)));
  }

  @Test
  void aFormWithAContentCodingOrAnotherCharsetStaysRawBytes() {
    assertThat(Fingerprint.request().contentType(FORM).contentEncoding("gzip").body("b=2&a=1".getBytes(StandardCharsets.US_ASCII)).build())
        .isNotEqualTo(Fingerprint.request().contentType(FORM).contentEncoding("gzip").body("a=1&b=2".getBytes(StandardCharsets.US_ASCII)).build());
    assertThat(Fingerprint.of(FORM + "; charset=utf-16", "b=2&a=1".getBytes(StandardCharsets.US_ASCII)))
        .isNotEqualTo(Fingerprint.of(FORM + "; charset=utf-16", "a=1&b=2".getBytes(StandardCharsets.US_ASCII)));
  }
}
