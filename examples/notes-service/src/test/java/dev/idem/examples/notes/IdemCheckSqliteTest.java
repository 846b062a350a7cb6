package dev.idem.examples.notes;

import dev.idem.check.IdemCheck;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;

/** idem check on the notes service in transactional mode on SQLite, counting the rows with SQL. */
class IdemCheckSqliteTest extends IdemCheckContract {

  @TempDir static Path dir;

  @Override
  String datasourceUrl() {
    return Api.sqliteUrl(dir);
  }

  @Override
  List<String> arguments() {
    return List.of("--idem.mode=transactional");
  }

  @Override
  IdemCheck.Builder counting(IdemCheck.Builder check) {
    return check.countSql(Api.sqliteUrl(dir), COUNT_SQL);
  }
}
