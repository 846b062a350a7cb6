package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Regression: the MySQL dialect's clock was {@code UNIX_TIMESTAMP(NOW(3))}, which turns the
 * session's local time back into an instant through the session's time zone. In the hour that a
 * daylight-saving zone repeats each autumn that local time is ambiguous, and the clock could read
 * an hour off: lease expiries and takeovers would then be decided on a wrong "now". The clock must
 * be the session's instant whatever its time zone.
 */
class MysqlClockIgnoresTheSessionTimeZoneTest {

  /**
   * 2023-11-05T06:30:00.250Z: 01:30:00.250 EST in New York, the second time that hour came there;
   * the old clock read it as the first (EDT), an hour early.
   */
  private static final long AMBIGUOUS_IN_NEW_YORK = 1_699_165_800_250L;

  @Test
  void theClockIsTheSessionsInstantInEveryTimeZone() throws Exception {
    TestDb db = TestDb.create(TestDb.Kind.MARIADB);
    try (Connection c = db.open(); Statement st = c.createStatement()) {
      boolean namedZones;
      try (ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM mysql.time_zone_name WHERE Name = 'America/New_York'")) {
        namedZones = rs.next() && rs.getLong(1) > 0;
      }
      List<String> zones = namedZones
          ? List.of("'+00:00'", "'+05:30'", "'-08:00'", "'America/New_York'")
          : List.of("'+00:00'", "'+05:30'", "'-08:00'");
      if (!namedZones) {
        System.out.println("MysqlClockIgnoresTheSessionTimeZoneTest: the server has no time zone tables"
            + " (mysql_tzinfo_to_sql), so the daylight-saving case is not run; the fixed offsets are");
      }
      for (String zone : zones) {
        st.execute("SET time_zone = " + zone);
        st.execute("SET timestamp = " + AMBIGUOUS_IN_NEW_YORK / 1000 + "." + AMBIGUOUS_IN_NEW_YORK % 1000);
        try (ResultSet rs = st.executeQuery("SELECT " + Dialect.MYSQL.nowMillis())) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getLong(1)).as("the clock in time zone %s", zone).isEqualTo(AMBIGUOUS_IN_NEW_YORK);
        }
      }
      st.execute("SET timestamp = DEFAULT");
      st.execute("SET time_zone = '+00:00'");
      long before = System.currentTimeMillis();
      try (ResultSet rs = st.executeQuery("SELECT " + Dialect.MYSQL.nowMillis())) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getLong(1)).as("the server's clock, not a fixed value").isBetween(before - 5_000, System.currentTimeMillis() + 5_000);
      }
    } finally {
      db.drop();
    }
  }
}
