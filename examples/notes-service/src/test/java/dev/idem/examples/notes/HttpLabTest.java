package dev.idem.examples.notes;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The HTTP lab's six cases ({@link HttpLabContract}) against two Spring MVC notes services, each on
 * an SQLite file of its own.
 */
class HttpLabTest extends HttpLabContract {

  @TempDir static Path dir;
  private final List<ConfigurableApplicationContext> services = new ArrayList<>();

  @Override
  protected URI start(String name, boolean idem) throws Exception {
    Files.createDirectories(dir.resolve(name));
    ConfigurableApplicationContext context = SpringApplication.run(NotesApplication.class,
        "--server.port=0", "--server.address=127.0.0.1",
        "--spring.datasource.url=" + Api.sqliteUrl(dir.resolve(name)),
        "--idem.enabled=" + idem);
    services.add(context);
    int port = context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    return URI.create("http://127.0.0.1:" + port);
  }

  @Override
  protected void stopAll() {
    services.forEach(ConfigurableApplicationContext::close);
  }
}
