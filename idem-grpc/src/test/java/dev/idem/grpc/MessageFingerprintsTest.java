package dev.idem.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import com.google.protobuf.Struct;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.Value;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class MessageFingerprintsTest {

  private static Value text(String s) {
    return Value.newBuilder().setStringValue(s).build();
  }

  @Test
  void mapEntriesInsertedInAnotherOrderFingerprintEqual() {
    Struct ab = Struct.newBuilder().putFields("a", text("1")).putFields("b", text("2")).putFields("c", text("3")).build();
    Struct cba = Struct.newBuilder().putFields("c", text("3")).putFields("b", text("2")).putFields("a", text("1")).build();

    // the plain serialization writes map entries in insertion order: the bytes differ
    assertThat(Arrays.equals(ab.toByteArray(), cba.toByteArray())).isFalse();
    assertThat(MessageFingerprints.of(ab)).isEqualTo(MessageFingerprints.of(cba));
    assertThat(MessageFingerprints.of(TestService.CREATE, ab)).isEqualTo(MessageFingerprints.of(cba));
  }

  @Test
  void anotherMapValueFingerprintsDifferently() {
    Struct one = Struct.newBuilder().putFields("a", text("1")).build();
    Struct two = Struct.newBuilder().putFields("a", text("2")).build();
    assertThat(MessageFingerprints.of(one)).isNotEqualTo(MessageFingerprints.of(two));
  }

  @Test
  void unknownFieldsAreKeptAsTheyCame() {
    StringValue plain = StringValue.of("x");
    StringValue withUnknown = plain.toBuilder()
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(9, UnknownFieldSet.Field.newBuilder().addVarint(1).build())
            .build())
        .build();
    assertThat(MessageFingerprints.of(withUnknown)).isNotEqualTo(MessageFingerprints.of(plain));
  }
}
