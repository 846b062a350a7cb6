package dev.idem.check;

/**
 * How a run counts effects: from the answers (proves less) or with a real count before and after
 * each check. Immutable.
 */
final class Counting {

  /** A real count for one marker. */
  interface Source {
    long count(Exchange exchange, String marker) throws Exception;
  }

  static final String FROM_ANSWERS =
      "from the answers: distinct Location fields (else top-level \"id\" members) among the 2xx answers, the lost"
          + " answer included as the fault proxy read it. This proves less than a real count: an effect whose"
          + " answer is lost or not a 2xx, or two effects reported under one id, stay invisible. Use --count-url"
          + " or --count-sql for a real count.";

  final boolean real;
  final String description;
  private final Source source;

  private Counting(boolean real, String description, Source source) {
    this.real = real;
    this.description = description;
    this.source = source;
  }

  static Counting fromAnswers() {
    return new Counting(false, FROM_ANSWERS, null);
  }

  static Counting real(String description, Source source) {
    return new Counting(true, description, source);
  }

  long count(Exchange exchange, String marker) throws Exception {
    if (source == null) {
      throw new IllegalStateException("counting from the answers has no count");
    }
    return source.count(exchange, marker);
  }
}
