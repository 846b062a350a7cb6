package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LabCommandTest {

  @TempDir Path dir;

  private final CliRun cli = new CliRun();
  private final StringWriter out = cli.out;
  private final StringWriter err = cli.err;

  private int run(String... args) {
    return cli.run(args);
  }

  @Test
  void labOnSqlitePrintsNaiveDuplicatesAndProtectedSingleEffectsAndExitsZero() {
    int status = run("lab", "--db", "jdbc:sqlite:" + dir.resolve("lab.db"));
    assertThat(status).as(err.toString()).isZero();
    assertThat(out.toString())
        .contains("database: SQLite")
        .containsPattern("lost-response\\s+naive\\s+2\\s+2\\s")
        .containsPattern("lost-response\\s+protected\\s+2\\s+1\\s")
        .containsPattern("concurrent\\s+protected\\s+8\\s+1\\s")
        .containsPattern("key-reuse\\s+protected\\s+2\\s+1\\s.*\\s1\\s+ok")
        .containsPattern("distinct-keys\\s+protected\\s+2\\s+2\\s");
  }

  @Test
  void jsonOutputHasTheDocumentedShape() throws Exception {
    int status = run("lab", "--json", "--concurrency", "4", "--db", "jdbc:sqlite:" + dir.resolve("lab.db"));
    assertThat(status).as(err.toString()).isZero();
    JsonNode root = new ObjectMapper().readTree(out.toString());
    assertThat(root.get("database").asText()).startsWith("SQLite");
    assertThat(root.get("results")).hasSize(8);
    for (JsonNode row : root.get("results")) {
      assertThat(row.has("scenario") && row.has("variant") && row.has("attempts") && row.has("effects")
          && row.get("ids").isArray() && row.has("rejected")).as(row.toString()).isTrue();
    }
    JsonNode concurrent = root.get("results").get(3);
    assertThat(concurrent.get("scenario").asText()).isEqualTo("concurrent");
    assertThat(concurrent.get("variant").asText()).isEqualTo("protected");
    assertThat(concurrent.get("attempts").asInt()).isEqualTo(4);
    assertThat(concurrent.get("effects").asInt()).isEqualTo(1);
  }

  @Test
  void anUnreachableDatabaseIsAClearErrorWithExitTwoAndNoStackTrace() {
    int status = run("lab", "--db", "jdbc:postgresql://127.0.0.1:1/none?user=x&connectTimeout=2");
    assertThat(status).isEqualTo(2);
    assertThat(err.toString()).startsWith("idem lab: cannot run on jdbc:postgresql://127.0.0.1:1/none").doesNotContain("\tat ");
  }

  @Test
  void httpLabRefusesOptionsItWouldIgnore() {
    assertThat(run("lab", "--http", "--db", "jdbc:sqlite:" + dir.resolve("x.db"))).isEqualTo(2);
    assertThat(err.toString()).contains("--db and --concurrency do not apply");
  }

  @Test
  void httpLabOnWebFluxTakesAPostgresServerOnlyAndItsOwnJar() {
    assertThat(run("lab", "--http", "--stack", "webflux", "--db", "jdbc:sqlite:" + dir.resolve("x.db"))).isEqualTo(2);
    assertThat(err.toString()).contains("--db must be a PostgreSQL server's JDBC URL");
    assertThat(run("lab", "--http", "--stack", "reactive")).isEqualTo(2);
    assertThat(err.toString()).contains("--stack is servlet or webflux, was reactive");
    assertThat(run("lab", "--stack", "webflux")).isEqualTo(2);
    assertThat(err.toString()).contains("--stack applies to --http only");
    // the module's directory has no examples/: the default jar is named, and no database is created
    assertThat(run("lab", "--http", "--stack", "webflux", "--db", "jdbc:postgresql://127.0.0.1:1/none?user=x")).isEqualTo(2);
    assertThat(err.toString()).contains("the notes service jar is missing: examples/notes-webflux/target/notes-webflux.jar");
  }

  @Test
  void grpcLabRefusesTheOtherLabs() {
    assertThat(run("lab", "--grpc", "--http")).isEqualTo(2);
    assertThat(err.toString()).contains("idem lab --grpc: --http, --queue and --steps are other labs");
    assertThat(run("lab", "--grpc", "--steps")).isEqualTo(2);
  }

  @Test
  void grpcLabOnAnUnreachableDatabaseIsExitTwoWithAClearErrorAndNoStackTrace() {
    int status = run("lab", "--grpc", "--db", "jdbc:postgresql://127.0.0.1:1/none?user=x&password=secret&connectTimeout=2");
    assertThat(status).isEqualTo(2);
    assertThat(err.toString()).startsWith("idem lab --grpc: cannot run on jdbc:postgresql://127.0.0.1:1/none")
        .doesNotContain("secret").doesNotContain("\tat ");
  }

  @Test
  void concurrencyOutOfRangeIsRefused() {
    assertThat(run("lab", "--concurrency", "1")).isEqualTo(2);
    assertThat(err.toString()).contains("--concurrency must be between 2 and 256");
  }

  @Test
  void stepsLabRefusesTheOtherLabsOptions() {
    assertThat(run("lab", "--steps", "--queue")).isEqualTo(2);
    assertThat(err.toString()).contains("idem lab --steps: --queue, --http and --concurrency do not apply");
    assertThat(run("lab", "--steps", "--concurrency", "4")).isEqualTo(2);
  }

  @Test
  void stepsLabOnAnUnreachableDatabaseIsExitTwoWithAClearErrorAndNoStackTrace() {
    int status = run("lab", "--steps", "--db", "jdbc:postgresql://127.0.0.1:1/none?user=x&password=secret&connectTimeout=2");
    assertThat(status).isEqualTo(2);
    assertThat(err.toString()).startsWith("idem lab --steps: cannot use the database jdbc:postgresql://127.0.0.1:1/none")
        .doesNotContain("secret").doesNotContain("\tat ");
  }
}
