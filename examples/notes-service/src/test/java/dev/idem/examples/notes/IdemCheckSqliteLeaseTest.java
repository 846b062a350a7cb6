package dev.idem.examples.notes;

import dev.idem.check.IdemCheck;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;

/**
 * idem check on the notes service in lease mode with fail-fast (a duplicate in progress gets 409
 * and Retry-After) on SQLite, counting the notes through {@code GET /notes}.
 */
class IdemCheckSqliteLeaseTest extends IdemCheckContract {

  @TempDir static Path dir;

  @Override
  String datasourceUrl() {
    return Api.sqliteUrl(dir);
  }

  @Override
  List<String> arguments() {
    return List.of("--idem.mode=lease", "--idem.in-progress=fail-fast");
  }

  @Override
  IdemCheck.Builder counting(IdemCheck.Builder check) {
    return check.countUrl(base.resolve("/notes"));
  }
}
