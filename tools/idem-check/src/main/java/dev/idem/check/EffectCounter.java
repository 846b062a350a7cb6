package dev.idem.check;

/**
 * Counts the effects that carry one marker, for a real count of what the API did (rather than
 * what it answered). {@link IdemCheck} puts a marker, unique to each check, into the body through
 * the {@code {{uuid}}} placeholder (the control sends it under two keys: both effects carry it),
 * calls {@link #count(String)} before and after each check, and reports the difference as the
 * check's effects.
 *
 * <p>For example, in a JUnit test of a service whose notes land in a table: {@code marker ->
 * jdbc.queryForObject("SELECT COUNT(*) FROM notes WHERE title LIKE ?", Long.class, "%" + marker +
 * "%")}. {@link IdemCheck.Builder#countUrl} and {@link IdemCheck.Builder#countSql} build the
 * common ones.
 *
 * <p>Implementations are called from one thread at a time, never during a check's requests.
 */
@FunctionalInterface
public interface EffectCounter {

  /**
   * @param marker the marker of one check, a UUID in canonical text form
   * @return how many effects exist now whose content contains the marker (the key-reuse check
   *     sends content with the marker followed by {@code -other}, which must count too), or, for a
   *     counter that cannot filter, how many effects exist in all; zero or more
   * @throws Exception if counting fails; the check then fails with the message
   */
  long count(String marker) throws Exception;
}
