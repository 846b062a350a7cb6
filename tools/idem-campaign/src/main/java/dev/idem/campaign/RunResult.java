package dev.idem.campaign;

import java.time.Duration;
import java.util.Map;

/**
 * What one campaign run (one store, one mode) measured. Immutable.
 *
 * @param store the store: {@code sqlite} or {@code postgresql} (notes and keys in that database), or
 *     {@code redis} (notes in SQLite, keys and stored responses in Redis)
 * @param mode the service's {@code idem.mode}: {@code transactional} or {@code lease}
 * @param operations operations started, each with one idempotency key and a unique title (its marker)
 * @param answered2xx operations whose final answer was 2xx
 * @param finalOther operations whose final answer was not 2xx, by status (a correct run has none)
 * @param unanswered operations left without a final answer when the run's drain time ran out
 * @param attempts HTTP attempts sent in all (retries included; verification requests excluded)
 * @param faults faults that actually happened, by kind (a cut counts only when it cut a connection)
 * @param duplicates markers with more than one row
 * @param lostWrites operations answered 2xx whose marker has no row
 * @param answersNamingAnotherRow operations answered 2xx whose answer names a note id that is not
 *     the marker's row
 * @param twoDifferent2xx keys whose second request (after the run, same key and body) got a 2xx
 *     answer different from the first one's
 * @param rowsWithout2xx markers with a row whose operation got no 2xx answer (an effect the client
 *     never learnt about: only possible for {@code unanswered} operations in a correct run)
 * @param fiveXx 5xx answers seen on attempts, by status and problem type
 * @param ioFailures attempts that got no answer (connection refused or reset, timeout), by exception
 * @param crossScopeReplays operations answered with an answer created for another user: the two
 *     operations of a cross-scope pair (same key and body, two users) answered with the same note,
 *     or a resend that got the other user's answer
 * @param fuzzRequests malformed and odd requests sent after the load ({@link Fuzzer})
 * @param fuzzFiveXx their 5xx answers by fuzz kind, status and problem title
 * @param fuzzStatuses their answers by status (0: none)
 * @param took how long the run took, service starts included
 */
public record RunResult(
    String store,
    String mode,
    int operations,
    int answered2xx,
    Map<Integer, Integer> finalOther,
    int unanswered,
    long attempts,
    Map<String, Integer> faults,
    int duplicates,
    int lostWrites,
    int answersNamingAnotherRow,
    int twoDifferent2xx,
    int rowsWithout2xx,
    Map<String, Integer> fiveXx,
    Map<String, Integer> ioFailures,
    int crossScopeReplays,
    int fuzzRequests,
    Map<String, Integer> fuzzFiveXx,
    Map<Integer, Integer> fuzzStatuses,
    Duration took) {

  /** @return the number of faults of this kind that happened, 0 if none */
  public int faults(String kind) {
    return faults.getOrDefault(kind, 0);
  }

  /** @return all 5xx answers to fuzzed requests */
  public int fuzzFiveXxTotal() {
    return fuzzFiveXx.values().stream().mapToInt(Integer::intValue).sum();
  }

  /** @return all 5xx answers seen on attempts */
  public int fiveXxTotal() {
    return fiveXx.values().stream().mapToInt(Integer::intValue).sum();
  }
}
