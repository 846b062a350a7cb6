package dev.idem.check;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * JSON bodies, parsed and written without changing any number: integers stay exact at any size,
 * decimals keep their digits and scale. Thread-safe.
 */
final class Json {

  static final ObjectMapper MAPPER = new ObjectMapper()
      .setNodeFactory(JsonNodeFactory.withExactBigDecimals(true))
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private Json() {}

  /** @return the parsed value, or {@code null} if the text is not one JSON value */
  static JsonNode parse(String text) {
    try {
      return MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      return null;
    }
  }

  static String compact(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON", e);
    }
  }

  /**
   * The same JSON value written differently: the members of every object in reverse order, with
   * line breaks, three-space indentation and a space on both sides of every colon.
   */
  static String reorderedAndRespaced(JsonNode node) {
    DefaultPrettyPrinter printer = new DefaultPrettyPrinter()
        .withObjectIndenter(new DefaultIndenter("   ", "\n"))
        .withArrayIndenter(new DefaultIndenter("   ", "\n"));
    try {
      return MAPPER.writer(printer).writeValueAsString(reversed(node)) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON", e);
    }
  }

  private static JsonNode reversed(JsonNode node) {
    if (node.isObject()) {
      List<Map.Entry<String, JsonNode>> members = new ArrayList<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        members.add(it.next());
      }
      ObjectNode out = MAPPER.createObjectNode();
      for (int i = members.size() - 1; i >= 0; i--) {
        out.set(members.get(i).getKey(), reversed(members.get(i).getValue()));
      }
      return out;
    }
    if (node.isArray()) {
      ArrayNode out = MAPPER.createArrayNode();
      node.forEach(e -> out.add(reversed(e)));
      return out;
    }
    return node;
  }

  /** @return whether some object in the value has two members or more, so that order can change */
  static boolean hasReorderableObject(JsonNode node) {
    if (node.isObject() && node.size() >= 2) {
      return true;
    }
    for (JsonNode child : node) {
      if (hasReorderableObject(child)) {
        return true;
      }
    }
    return false;
  }

  /**
   * @return the object with one more member, {@code name}, whose value is the exact number {@code
   *     literal}, written compactly
   */
  static String withNumberMember(JsonNode object, String name, String literal) {
    ObjectNode copy = ((ObjectNode) object).deepCopy();
    if (literal.contains(".") || literal.contains("e") || literal.contains("E")) {
      copy.put(name, new BigDecimal(literal));
    } else {
      copy.put(name, new BigInteger(literal));
    }
    return compact(copy);
  }
}
