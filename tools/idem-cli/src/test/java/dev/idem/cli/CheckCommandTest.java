package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.check.ToyApi;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(120)
class CheckCommandTest {

  private static final String BODY = "{\"title\":\"check-{{uuid}}\"}";

  @TempDir Path dir;

  private final CliRun cli = new CliRun();

  @Test
  void aCorrectApiExitsZeroWithATableAndJUnitXml() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NONE)) {
      Path xml = dir.resolve("reports/idem-check.xml");
      int status = cli.run("check", api.items().toString(), "--body", BODY, "--count-url", api.items().toString(),
          "--settle", "100", "-H", "X-Team: checks", "--junit", xml.toString());

      assertThat(status).as(cli.out + "\n" + cli.err).isZero();
      assertThat(cli.out.toString())
          .contains("check                   required  verdict")
          .contains("lost-response           yes       pass")
          .contains("result: every required check passed");
      assertThat(Files.readString(xml)).contains("<testsuite").contains("failures=\"0\"");
    }
  }

  @Test
  void anApiWithoutIdempotencyExitsOneAndShowsTheEffects() throws Exception {
    try (ToyApi api = ToyApi.start(ToyApi.Flaw.NO_IDEMPOTENCY)) {
      int status = cli.run("check", api.items().toString(), "--body", BODY, "--settle", "0", "--json");

      assertThat(status).as(cli.out + "\n" + cli.err).isEqualTo(1);
      JsonNode report = new ObjectMapper().readTree(cli.out.toString());
      assertThat(report.get("exitStatus").asInt()).isEqualTo(1);
      assertThat(report.get("checks").get(1).get("check").asText()).isEqualTo("lost-response");
      assertThat(report.get("checks").get(1).get("effects").asInt()).isEqualTo(2);
      assertThat(report.get("checks").get(2).get("effects").asInt()).isEqualTo(8);
    }
  }

  @Test
  void anApiWithAUniqueOrderNumberPassesWithKeyUuidAndIsBlindWithUuid() throws Exception {
    try (ToyApi api = ToyApi.withUniqueMember("number")) {
      int status = cli.run("check", api.items().toString(), "--body", "{\"number\":\"{{key-uuid}}\",\"note\":\"check-{{uuid}}\"}",
          "--count-url", api.items().toString(), "--settle", "100");

      assertThat(status).as(cli.out + "\n" + cli.err).isZero();
      assertThat(cli.out.toString()).contains("control: two keys, two effects");

      CliRun blind = new CliRun();
      int blindStatus = blind.run("check", api.items().toString(), "--body", "{\"number\":\"{{uuid}}\",\"note\":\"check\"}",
          "--count-url", api.items().toString(), "--settle", "100");

      assertThat(blindStatus).as(blind.out + "\n" + blind.err).isEqualTo(1);
      assertThat(blind.out.toString()).contains("control: BLIND: the second request, under another key, was answered 409")
          .contains("{{key-uuid}}")
          .contains("the counting is BLIND (see control)")
          .contains("result: FAILED: control" + System.lineSeparator());
    }
  }

  @Test
  void anUnreachableApiExitsTwo() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    int status = cli.run("check", "http://127.0.0.1:" + port + "/notes", "--body", BODY);

    assertThat(status).isEqualTo(2);
    assertThat(cli.err.toString()).contains("idem check: cannot reach 127.0.0.1:" + port);
  }

  @Test
  void wrongOptionsExitTwoWithAClearMessage() {
    assertThat(cli.run("check", "http://127.0.0.1:1/notes", "--body", "{\"title\":\"same\"}")).isEqualTo(2);
    assertThat(cli.err.toString()).contains("{{uuid}}");
    assertThat(new CliRun().run("check", "http://127.0.0.1:1/notes", "--body", BODY, "--count-sql", "SELECT 1")).isEqualTo(2);
    assertThat(new CliRun().run("check", "http://127.0.0.1:1/notes", "--body", BODY, "-H", "no colon")).isEqualTo(2);
  }
}
