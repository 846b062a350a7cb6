package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.spi.StoredResponseCodec;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StoredResponseTest {

  private final StoredResponse sample =
      StoredResponse.builder(201)
          .header("Content-Type", "application/json")
          .header("Location", "/notes/1")
          .header("Vary", "Accept")
          .header("vary", "Accept-Language")
          .body(new byte[] {'{', '}', 0, (byte) 0xC3})
          .build();

  @Test
  void headersAreLookedUpIgnoringCaseAndRepeatedNamesCollect() {
    assertThat(sample.header("content-type")).isEqualTo("application/json");
    assertThat(sample.headers().get("Vary")).containsExactly("Accept", "Accept-Language");
    assertThat(sample.header("ETag")).isNull();
  }

  @Test
  void bodyIsCopiedInAndOut() {
    byte[] body = {1, 2, 3};
    StoredResponse r = StoredResponse.of(200, body);
    body[0] = 9;
    r.body()[1] = 9;
    assertThat(r.body()).containsExactly(1, 2, 3);
  }

  @Test
  void rejectsBadStatusAndHeaderInjection() {
    assertThatThrownBy(() -> StoredResponse.builder(99)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> StoredResponse.builder(600)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> StoredResponse.builder(200).header("X-A", "v\r\nSet-Cookie: x"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> StoredResponse.builder(200).header("Bad Name", "v")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aHeaderValueTooLongForTheCodecIsRefusedWhenBuilt() {
    assertThat(StoredResponse.builder(200).header("X-Big", "v".repeat(StoredResponse.MAX_HEADER_LENGTH)).build().header("x-big"))
        .hasSize(StoredResponse.MAX_HEADER_LENGTH);
    assertThatThrownBy(() -> StoredResponse.builder(200).header("X-Big", "v".repeat(70_000)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("longer than 16384");
  }

  @Test
  void codecRoundTripsTheLongestHeaderOfThreeByteCharacters() {
    StoredResponse r = StoredResponse.builder(200).header("X-Big", "\u20ac".repeat(StoredResponse.MAX_HEADER_LENGTH)).build();
    assertThat(StoredResponseCodec.decode(StoredResponseCodec.encode(r))).isEqualTo(r);
  }

  @Test
  void codecRoundTripsStatusHeadersInOrderAndBodyBytes() {
    StoredResponse decoded = StoredResponseCodec.decode(StoredResponseCodec.encode(sample));
    assertThat(decoded).isEqualTo(sample);
    assertThat(decoded.headers().keySet()).containsExactly("Content-Type", "Location", "Vary");
    assertThat(decoded.body()).containsExactly(sample.body());
  }

  @Test
  void codecRoundTripsAnEmptyResponse() {
    StoredResponse empty = StoredResponse.of(204, new byte[0]);
    assertThat(StoredResponseCodec.decode(StoredResponseCodec.encode(empty))).isEqualTo(empty);
  }

  @Test
  void aCorruptRecordIsAStoreErrorNeverAnEmptyResponse() {
    byte[] encoded = StoredResponseCodec.encode(sample);
    assertThatThrownBy(() -> StoredResponseCodec.decode(Arrays.copyOf(encoded, encoded.length - 1)))
        .isInstanceOf(IdemStoreException.class)
        .hasMessageContaining("corrupt");
    byte[] wrongMagic = encoded.clone();
    wrongMagic[0] = 'X';
    assertThatThrownBy(() -> StoredResponseCodec.decode(wrongMagic)).isInstanceOf(IdemStoreException.class);
    assertThatThrownBy(() -> StoredResponseCodec.decode(new byte[0])).isInstanceOf(IdemStoreException.class);
  }

  @Test
  void aRecordWithoutTheBodyKeepsStatusHeadersAndLengthAndSurvivesTheCodec() {
    StoredResponse record = StoredResponse.builder(201).header("Location", "/notes/7").body("dropped")
        .bodyNotStored(2_097_152).build();
    assertThat(record.bodyStored()).isFalse();
    assertThat(record.status()).isEqualTo(201);
    assertThat(record.bodyLength()).isZero();
    assertThat(record.answeredBodyLength()).isEqualTo(2_097_152);
    assertThat(record.header("location")).isEqualTo("/notes/7");
    assertThat(record.header(StoredResponse.BODY_NOT_STORED_HEADER)).isEqualTo("2097152");
    StoredResponse decoded = StoredResponseCodec.decode(StoredResponseCodec.encode(record));
    assertThat(decoded).isEqualTo(record);
    assertThat(decoded.bodyStored()).isFalse();

    StoredResponse whole = StoredResponse.of(200, "abc");
    assertThat(whole.bodyStored()).isTrue();
    assertThat(whole.answeredBodyLength()).isEqualTo(3);
    assertThat(StoredResponse.builder(200).bodyNotStored(1).bodyNotStored(5).build().headers())
        .as("marked once").containsExactly(Map.entry(StoredResponse.BODY_NOT_STORED_HEADER, List.of("5")));
    assertThatThrownBy(() -> StoredResponse.builder(200).bodyNotStored(-1)).isInstanceOf(IllegalArgumentException.class);
  }
}
