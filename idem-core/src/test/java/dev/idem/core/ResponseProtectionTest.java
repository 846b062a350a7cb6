package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.spi.StoredResponseCodec;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.crypto.AEADBadTagException;
import org.junit.jupiter.api.Test;

class ResponseProtectionTest {

  private static final byte[] KEY_A = key(1);
  private static final byte[] KEY_B = key(2);
  private static final String SECRET = "card 4111-1111-1111-1111 of alice";

  private final Scope scope = Scope.of("alice", "POST /payments");
  private final IdempotencyKey key = IdempotencyKey.of("k-1");
  private final Fingerprint fingerprint = Fingerprint.ofBytes("payload".getBytes(StandardCharsets.UTF_8));
  private final StoredResponse response =
      StoredResponse.builder(201)
          .header("Content-Type", "application/json")
          .header("Location", "/payments/7")
          .body("{\"note\":\"" + SECRET + "\"}")
          .build();
  private final ResponseProtection ringA = ResponseProtection.builder().key("a", KEY_A).currentKey("a").build();

  private static byte[] key(int seed) {
    byte[] k = new byte[ResponseProtection.KEY_BYTES];
    for (int i = 0; i < k.length; i++) {
      k[i] = (byte) (seed * 31 + i);
    }
    return k;
  }

  @Test
  void protectedRecordsReplayTheExactResponseAndHideItsBytes() {
    byte[] sealed = ringA.seal(scope, key, fingerprint, response);

    assertThat(ResponseProtection.isProtected(sealed)).isTrue();
    assertThat(new String(sealed, StandardCharsets.ISO_8859_1)).doesNotContain(SECRET).doesNotContain("/payments/7");
    assertThat(sealed).hasSize(3 + 1 + 12 + StoredResponseCodec.encode(response).length + 16);
    assertThat(ringA.open(scope, key, fingerprint, sealed)).isEqualTo(response);
    assertThat(ringA.clearStatus(response)).isNull();
  }

  @Test
  void everyRecordHasItsOwnNonce() {
    byte[] first = ringA.seal(scope, key, fingerprint, response);
    byte[] second = ringA.seal(scope, key, fingerprint, response);

    assertThat(Arrays.copyOfRange(first, 4, 16)).isNotEqualTo(Arrays.copyOfRange(second, 4, 16));
    assertThat(first).isNotEqualTo(second);
  }

  @Test
  void aChangeOfAnyBitInAnyRegionOfTheEnvelopeIsRefusedNeverReplayed() {
    byte[] sealed = ringA.seal(scope, key, fingerprint, response);
    // regions: magic 0, version 1, key id length 2, key id 3, nonce 4..15, ciphertext, tag (last 16)
    for (int i = 0; i < sealed.length; i++) {
      for (int bit : new int[] {0x01, 0x80}) {
        byte[] tampered = sealed.clone();
        tampered[i] ^= (byte) bit;
        int at = i;
        assertThatThrownBy(() -> ringA.open(scope, key, fingerprint, tampered))
            .as("byte %d, bit %x", at, bit)
            .isInstanceOf(StoredResponseUnreadableException.class);
      }
    }
  }

  @Test
  void aTamperedCiphertextOrTagFailsAuthentication() {
    byte[] sealed = ringA.seal(scope, key, fingerprint, response);
    byte[] body = sealed.clone();
    body[20] ^= 1;
    byte[] tag = sealed.clone();
    tag[tag.length - 1] ^= 1;

    for (byte[] tampered : List.of(body, tag)) {
      assertThatThrownBy(() -> ringA.open(scope, key, fingerprint, tampered))
          .isInstanceOf(StoredResponseUnreadableException.class)
          .hasCauseInstanceOf(AEADBadTagException.class)
          .hasMessageContaining("failed authentication");
    }
  }

  @Test
  void everyTruncationIsRefused() {
    byte[] sealed = ringA.seal(scope, key, fingerprint, response);
    for (int length = 0; length < sealed.length; length++) {
      byte[] cut = Arrays.copyOf(sealed, length);
      assertThatThrownBy(() -> ringA.open(scope, key, fingerprint, cut))
          .as("length %d", length)
          .isInstanceOf(StoredResponseUnreadableException.class);
    }
    byte[] longer = Arrays.copyOf(sealed, sealed.length + 1);
    assertThatThrownBy(() -> ringA.open(scope, key, fingerprint, longer)).isInstanceOf(StoredResponseUnreadableException.class);
  }

  @Test
  void aCiphertextMovedToAnotherRecordIsRefused() {
    byte[] sealed = ringA.seal(scope, key, fingerprint, response);
    Fingerprint other = Fingerprint.ofBytes("other payload".getBytes(StandardCharsets.UTF_8));

    assertThatThrownBy(() -> ringA.open(Scope.of("bob", "POST /payments"), key, fingerprint, sealed))
        .isInstanceOf(StoredResponseUnreadableException.class);
    assertThatThrownBy(() -> ringA.open(Scope.of("alice", "POST /refunds"), key, fingerprint, sealed))
        .isInstanceOf(StoredResponseUnreadableException.class);
    assertThatThrownBy(() -> ringA.open(scope, IdempotencyKey.of("k-2"), fingerprint, sealed))
        .isInstanceOf(StoredResponseUnreadableException.class);
    assertThatThrownBy(() -> ringA.open(scope, key, other, sealed))
        .isInstanceOf(StoredResponseUnreadableException.class);
  }

  @Test
  void identityPartsCannotBeShiftedBetweenFieldsOfTheAssociatedData() {
    // "ab" + "c" and "a" + "bc" must be different records: the associated data has lengths
    Scope first = Scope.of("ab", "c");
    byte[] sealed = ringA.seal(first, key, fingerprint, response);

    assertThatThrownBy(() -> ringA.open(Scope.of("a", "bc"), key, fingerprint, sealed))
        .isInstanceOf(StoredResponseUnreadableException.class);
  }

  @Test
  void recordsWrittenWithTheOldKeyReplayAfterRotationWhileTheOldKeyIsKept() {
    byte[] underA = ringA.seal(scope, key, fingerprint, response);
    ResponseProtection rotated = ResponseProtection.builder().key("a", KEY_A).key("b", KEY_B).currentKey("b").build();

    assertThat(rotated.open(scope, key, fingerprint, underA)).isEqualTo(response);
    byte[] underB = rotated.seal(scope, key, fingerprint, response);
    assertThat(new String(underB, 3, 1, StandardCharsets.US_ASCII)).isEqualTo("b");
    assertThat(rotated.open(scope, key, fingerprint, underB)).isEqualTo(response);
  }

  @Test
  void anUnknownKeyIdIsRefusedAndNamed() {
    byte[] underA = ringA.seal(scope, key, fingerprint, response);
    ResponseProtection onlyB = ResponseProtection.builder().key("b", KEY_B).currentKey("b").build();

    assertThatThrownBy(() -> onlyB.open(scope, key, fingerprint, underA))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("key id 'a'")
        .hasMessageNotContaining("alice")
        .hasMessageNotContaining("k-1");
  }

  @Test
  void aKeyOfTheSameIdWithOtherBytesFailsAuthentication() {
    byte[] underA = ringA.seal(scope, key, fingerprint, response);
    ResponseProtection impostor = ResponseProtection.builder().key("a", KEY_B).currentKey("a").build();

    assertThatThrownBy(() -> impostor.open(scope, key, fingerprint, underA))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasCauseInstanceOf(AEADBadTagException.class);
  }

  @Test
  void plaintextRecordsWrittenBeforeProtectionStayReadableUnlessRefused() {
    byte[] plain = ResponseProtection.none().seal(scope, key, fingerprint, response);
    assertThat(plain).isEqualTo(StoredResponseCodec.encode(response));
    assertThat(ResponseProtection.none().clearStatus(response)).isEqualTo(201);

    assertThat(ringA.open(scope, key, fingerprint, plain)).isEqualTo(response);
    ResponseProtection strict =
        ResponseProtection.builder().key("a", KEY_A).currentKey("a").acceptPlaintextRecords(false).build();
    assertThatThrownBy(() -> strict.open(scope, key, fingerprint, plain))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("in clear");
    assertThat(strict.open(scope, key, fingerprint, strict.seal(scope, key, fingerprint, response))).isEqualTo(response);
  }

  @Test
  void protectedRecordsReadWithoutAKeyringAreRefusedNeverReplayed() {
    byte[] underA = ringA.seal(scope, key, fingerprint, response);

    assertThatThrownBy(() -> ResponseProtection.none().open(scope, key, fingerprint, underA))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("protection is off")
        .hasMessageContaining("'a'");
  }

  @Test
  void bytesOfNoKnownFormatAreRefused() {
    for (byte[] junk : new byte[][] {{}, {0}, {'X', 1, 2}, {'P'}, {'P', 2, 1, 'a'}, {'I', 9}}) {
      assertThatThrownBy(() -> ringA.open(scope, key, fingerprint, junk))
          .isInstanceOf(StoredResponseUnreadableException.class);
    }
  }

  @Test
  void theBuilderValidatesKeysAndTheCurrentKeyEagerly() {
    assertThatThrownBy(() -> ResponseProtection.builder().key("a", new byte[31]))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("32 bytes");
    assertThatThrownBy(() -> ResponseProtection.builder().key("a", new byte[33]))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ResponseProtection.builder().key("a", new byte[16]))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ResponseProtection.builder().key("", KEY_A)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ResponseProtection.builder().key("a b", KEY_A)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ResponseProtection.builder().key("x".repeat(33), KEY_A)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ResponseProtection.builder().key("a", KEY_A).key("a", KEY_B))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("twice");
    assertThatThrownBy(() -> ResponseProtection.builder().key("a", "not base64!"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("base64");
    assertThatThrownBy(() -> ResponseProtection.builder().key("a", Base64.getEncoder().encodeToString(new byte[16])))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("32 bytes");
    assertThatThrownBy(() -> ResponseProtection.builder().build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("at least one key");
    assertThatThrownBy(() -> ResponseProtection.builder().key("a", KEY_A).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("current key");
    assertThatThrownBy(() -> ResponseProtection.builder().key("a", KEY_A).currentKey("b").build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("'b'");
  }

  @Test
  void aBase64KeyIsTheSameKeyAsItsBytes() {
    ResponseProtection fromText =
        ResponseProtection.builder().key("a", Base64.getEncoder().encodeToString(KEY_A)).currentKey("a").build();

    assertThat(fromText.open(scope, key, fingerprint, ringA.seal(scope, key, fingerprint, response))).isEqualTo(response);
  }

  @Test
  void keyBytesAreCopiedInAndNeverShown() {
    byte[] k = KEY_A.clone();
    ResponseProtection p = ResponseProtection.builder().key("a", k).currentKey("a").build();
    byte[] sealed = p.seal(scope, key, fingerprint, response);
    Arrays.fill(k, (byte) 0);

    assertThat(p.open(scope, key, fingerprint, sealed)).isEqualTo(response);
    assertThat(p.toString()).contains("current=a").doesNotContain(Base64.getEncoder().encodeToString(KEY_A));
    assertThat(p.keyIds()).containsExactly("a");
    assertThat(p.currentKeyId()).isEqualTo("a");
  }

  @Test
  void oneProtectionIsSafeToShareBetweenThreads() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Boolean>> results = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        int thread = t;
        results.add(pool.submit(() -> {
          for (int i = 0; i < 300; i++) {
            StoredResponse r = StoredResponse.of(200, "thread " + thread + " call " + i);
            IdempotencyKey k = IdempotencyKey.of("t" + thread + "-" + i);
            if (!ringA.open(scope, k, fingerprint, ringA.seal(scope, k, fingerprint, r)).equals(r)) {
              return false;
            }
          }
          return true;
        }));
      }
      for (Future<Boolean> f : results) {
        assertThat(f.get()).isTrue();
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
