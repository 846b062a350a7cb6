package dev.idem.check;

import java.util.Locale;

/**
 * The checks {@link IdemCheck} runs, in the order it runs them. Each has a stable id (used in the
 * table, in JSON and as the JUnit test case name), says whether it is required (a required check
 * that fails makes the run fail; the others can at worst give a {@link Verdict#WARNING}) and what
 * it expects. The rules come from the IETF draft "The Idempotency-Key HTTP Header Field"
 * (draft-ietf-httpapi-idempotency-key-header) and RFC 9457.
 */
public enum CheckName {

  /**
   * The same request sent with two different keys makes two effects: proof that the counting can
   * see a duplicate at all. If it counts one, every "one effect" below proves nothing. The two
   * requests differ only in {@code {{key-uuid}}}, if the body has it.
   */
  CONTROL(true, "the same request with two different keys (only {{key-uuid}} differs) makes two effects, so the counting"
      + " can see a duplicate"),

  /**
   * Through the fault proxy, the first response is lost after the server wrote it; the retry with
   * the same key must get the same status and body (and never a first answer marked {@code
   * Idempotent-Replayed}), and one effect must exist.
   */
  LOST_RESPONSE(true, "after a response lost once the server wrote it, the retry with the same key gets the same status and body; one effect"),

  /**
   * N attempts with one key, released together: one effect; every 2xx answer identical; the
   * others 409 with {@code Retry-After} (draft section 2.6).
   */
  CONCURRENT_DUPLICATES(true, "N attempts with one key released together: one effect, every 2xx answer identical, the others 409 with Retry-After"),

  /**
   * The key reused with different content: 422 (draft section 2.7). Another 4xx is a deviation;
   * a 2xx fails.
   */
  KEY_REUSE(true, "the key reused with different content is refused with 422"),

  /** The same JSON with members reordered and re-spaced is the same request: a replay, not a 422. */
  FINGERPRINT_REORDERED(true, "the same JSON with members reordered and re-spaced is a replay, not a 422"),

  /**
   * JSON numbers that differ only beyond double precision ({@code 9007199254740993} and {@code
   * 9007199254740992}) are different content: 422, not a replay. Skipped when {@link #KEY_REUSE}
   * showed that the API does not compare content at all (that fault is reported once, there).
   */
  FINGERPRINT_BIG_NUMBER(true, "numbers that differ only beyond double precision are different content: 422, not a replay"),

  /**
   * No key: 400 where the route requires one (draft section 2.7). Not required: an API may make
   * keys optional; acceptance is then reported as a warning.
   */
  MISSING_KEY(false, "no Idempotency-Key: 400 where the route requires one (a warning if keys are optional)"),

  /** An empty and a badly quoted key (draft section 2.1: an sf-string): 400. */
  MALFORMED_KEY(true, "an empty and a badly quoted Idempotency-Key are refused with 400"),

  /** Two {@code Idempotency-Key} fields in one request (draft section 2.1 allows one): 400. */
  SECOND_KEY_FIELD(true, "a request with two Idempotency-Key fields is refused with 400"),

  /**
   * Every error answer seen during the run is {@code application/problem+json} (RFC 9457, as the
   * draft's examples show). Not required.
   */
  PROBLEM_DETAILS(false, "error answers are application/problem+json (RFC 9457)");

  private final boolean required;
  private final String expectation;

  CheckName(boolean required, String expectation) {
    this.required = required;
    this.expectation = expectation;
  }

  /** @return the id, for example {@code lost-response}; never {@code null} */
  public String id() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /** @return whether a failure of this check makes the run fail (exit status 1) */
  public boolean required() {
    return required;
  }

  /** @return what the check expects, in one sentence; never {@code null} */
  public String expectation() {
    return expectation;
  }

  /** @return {@link #id()} */
  @Override
  public String toString() {
    return id();
  }
}
