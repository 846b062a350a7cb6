package dev.idem.examples.notes;

import dev.idem.check.IdemCheck;
import dev.idem.testkit.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * idem check on the notes service in transactional mode on PostgreSQL, counting the rows with the
 * service's own JdbcTemplate. Skipped with a message when the server is not reachable; a failure
 * under {@code CI=true}.
 */
class IdemCheckPostgresTest extends IdemCheckContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  String datasourceUrl() {
    return DB.target().url();
  }

  @Override
  List<String> arguments() {
    return List.of("--idem.mode=transactional");
  }

  @Override
  IdemCheck.Builder counting(IdemCheck.Builder check) {
    JdbcTemplate jdbc = app.getBean(JdbcTemplate.class);
    return check.countWith("rows in notes whose title contains the marker (JdbcTemplate)",
        marker -> jdbc.queryForObject("SELECT COUNT(*) FROM notes WHERE position(? in title) > 0", Long.class, marker));
  }
}
