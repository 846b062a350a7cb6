package dev.idem.examples.notes;

import dev.idem.check.IdemCheck;
import dev.idem.testkit.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * idem check on the notes service in lease mode, duplicates waiting for the first request, on
 * PostgreSQL, counting the rows with SQL. Skipped with a message when the server is not reachable;
 * a failure under {@code CI=true}.
 */
class IdemCheckPostgresLeaseTest extends IdemCheckContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  String datasourceUrl() {
    return DB.target().url();
  }

  @Override
  List<String> arguments() {
    return List.of("--idem.mode=lease", "--idem.in-progress=wait");
  }

  @Override
  IdemCheck.Builder counting(IdemCheck.Builder check) {
    return check.countSql(DB.target().url(), COUNT_SQL);
  }
}
