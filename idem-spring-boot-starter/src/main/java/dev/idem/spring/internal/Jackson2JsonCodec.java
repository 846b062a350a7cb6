package dev.idem.spring.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.reflect.Type;
import java.util.Objects;

/** {@link JsonCodec} on Jackson 2 ({@code com.fasterxml.jackson.databind}); loaded only when it is present. */
public final class Jackson2JsonCodec implements JsonCodec {

  private final ObjectMapper mapper;

  public Jackson2JsonCodec(ObjectMapper mapper) {
    this.mapper = Objects.requireNonNull(mapper, "mapper");
  }

  @Override
  public byte[] write(Object value) {
    try {
      return mapper.writeValueAsBytes(value);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot write as JSON (Jackson 2): " + e.getMessage(), e);
    }
  }

  @Override
  public Object read(byte[] json, Type type) {
    try {
      return mapper.readValue(json, mapper.getTypeFactory().constructType(type));
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read the stored JSON as " + type.getTypeName() + " (Jackson 2): " + e.getMessage(), e);
    }
  }

  @Override
  public String name() {
    return "jackson2";
  }
}
