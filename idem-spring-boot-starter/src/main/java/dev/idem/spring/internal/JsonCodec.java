package dev.idem.spring.internal;

import dev.idem.spring.Idempotent;
import java.lang.reflect.Type;

/**
 * The JSON of {@link Idempotent} methods: their arguments (the fingerprint) and their result (the
 * stored response). Internal: the starter picks Jackson 3 ({@code tools.jackson}) when it is on the
 * class path, else Jackson 2 ({@code com.fasterxml.jackson}), and uses the application's own mapper
 * bean of that major when there is one, so that the starter never makes the application add a
 * Jackson major it does not use. Implementations are thread-safe.
 */
public interface JsonCodec {

  /**
   * @param value the value to write, may be {@code null} (written as {@code null})
   * @return its JSON, UTF-8, never {@code null}
   * @throws IllegalArgumentException if the value cannot be written as JSON
   */
  byte[] write(Object value);

  /**
   * @param json UTF-8 JSON as {@link #write} wrote it, never {@code null}
   * @param type the generic type to read, such as a method's generic return type
   * @return the value, may be {@code null}
   * @throws IllegalArgumentException if the JSON cannot be read as {@code type}
   */
  Object read(byte[] json, Type type);

  /** Which library this is, for messages and tests: {@code "jackson2"} or {@code "jackson3"}. */
  String name();
}
