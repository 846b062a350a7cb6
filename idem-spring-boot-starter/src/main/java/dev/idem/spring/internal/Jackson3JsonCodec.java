package dev.idem.spring.internal;

import java.lang.reflect.Type;
import java.util.Objects;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.ObjectMapper;

/** {@link JsonCodec} on Jackson 3 ({@code tools.jackson.databind}); loaded only when it is present. */
public final class Jackson3JsonCodec implements JsonCodec {

  private final ObjectMapper mapper;

  public Jackson3JsonCodec(ObjectMapper mapper) {
    this.mapper = Objects.requireNonNull(mapper, "mapper");
  }

  @Override
  public byte[] write(Object value) {
    try {
      return mapper.writeValueAsBytes(value);
    } catch (JacksonException e) {
      throw new IllegalArgumentException("cannot write as JSON (Jackson 3): " + e.getOriginalMessage(), e);
    }
  }

  @Override
  public Object read(byte[] json, Type type) {
    try {
      return mapper.readValue(json, mapper.getTypeFactory().constructType(type));
    } catch (JacksonException e) {
      throw new IllegalArgumentException("cannot read the stored JSON as " + type.getTypeName() + " (Jackson 3): " + e.getOriginalMessage(), e);
    }
  }

  @Override
  public String name() {
    return "jackson3";
  }
}
