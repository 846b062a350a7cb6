package dev.idem.examples.notes.webflux;

import dev.idem.examples.notes.HttpLabContract;
import dev.idem.lab.NotesServiceProcess;
import dev.idem.testkit.TestDatabase;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The HTTP lab's six cases ({@link HttpLabContract}) against two WebFlux notes services, each on a
 * PostgreSQL database of its own through R2DBC: the same table as the Spring MVC service's.
 */
class HttpLabWebFluxTest extends HttpLabContract {

  @RegisterExtension static final TestDatabase PROTECTED = TestDatabase.postgres();
  @RegisterExtension static final TestDatabase UNPROTECTED = TestDatabase.postgres();

  private final List<ConfigurableApplicationContext> services = new ArrayList<>();

  @Override
  protected URI start(String name, boolean idem) {
    List<String> arguments = new ArrayList<>(List.of("--server.port=0", "--server.address=127.0.0.1", "--idem.enabled=" + idem));
    NotesServiceProcess.r2dbcProperties((idem ? PROTECTED : UNPROTECTED).url())
        .forEach((property, value) -> arguments.add("--" + property + "=" + value));
    ConfigurableApplicationContext context = SpringApplication.run(NotesWebFluxApplication.class, arguments.toArray(String[]::new));
    services.add(context);
    int port = context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    return URI.create("http://127.0.0.1:" + port);
  }

  @Override
  protected void stopAll() {
    services.forEach(ConfigurableApplicationContext::close);
  }
}
