package dev.idem.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * README.md is a doorway: at most 200 lines (was: 201, and nothing checked it), with the two
 * commands a newcomer needs on a fresh machine near the top, the test command being the one
 * {@code .ci/run} runs.
 */
class ReadmeDoorwayTest {

  @Test
  void theReadmeIsAtMost200LinesWithBothCommandsInItsFirst20() throws Exception {
    List<String> lines = Files.readAllLines(SnippetTest.root().resolve("README.md"), StandardCharsets.UTF_8);
    assertThat(lines.size()).as("README.md lines").isLessThanOrEqualTo(200);
    List<String> top = lines.subList(0, Math.min(20, lines.size()));
    assertThat(top).as("the build-and-run command").anySatisfy(l -> assertThat(l).startsWith("./mvnw -B -q -DskipTests package && java -jar"));
    assertThat(top).as("the test command").contains("./mvnw -B verify");
    String ci = Files.readString(SnippetTest.root().resolve(".ci/run"), StandardCharsets.UTF_8);
    assertThat(ci).as(".ci/run runs the README's test command").contains("\n./mvnw -B verify\n");
  }
}
