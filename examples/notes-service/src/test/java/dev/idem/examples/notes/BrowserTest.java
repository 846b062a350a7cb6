package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.faultproxy.Fault;
import dev.idem.faultproxy.FaultProxy;
import dev.idem.faultproxy.LoggedRequest;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The page in headless Chromium, loaded through a {@link FaultProxy} that loses the answer to the
 * first save: the user clicks Save once, and the service must hold exactly one note.
 *
 * <p>Uses Debian's {@code /usr/bin/chromium} and {@code /usr/bin/chromedriver}, named explicitly,
 * so that Selenium Manager never downloads a browser or driver (Chromium's own background
 * networking is switched off too). Without them the class is skipped
 * with a "[notes-service] SKIPPED:" line on standard error, or fails under {@code CI=true}.
 *
 * <p>Request numbers: the page makes exactly four requests before it says "Ready." ({@code GET /},
 * {@code /style.css}, {@code /app.js}, {@code /notes}; the favicon is inlined, static files are
 * {@code no-store}), so the first {@code POST /notes} is request 5. Each test checks that before it
 * clicks, and checks in the proxy's log afterwards that the faults hit the POSTs.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
class BrowserTest {

  // Debian's binaries, named explicitly; -Dnotes.chromium=... and -Dnotes.chromedriver=... point
  // elsewhere (never to something Selenium Manager would fetch).
  static final File CHROMIUM = new File(System.getProperty("notes.chromium", "/usr/bin/chromium"));
  static final File CHROMEDRIVER = new File(System.getProperty("notes.chromedriver", "/usr/bin/chromedriver"));
  static final int PAGE_LOAD_REQUESTS = 4;
  static final int FIRST_POST = PAGE_LOAD_REQUESTS + 1;

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> Api.sqliteUrl(dir));
  }

  @BeforeAll
  static void browserInstalled() {
    if (CHROMIUM.canExecute() && CHROMEDRIVER.canExecute()) {
      return;
    }
    String why = "headless browser tests need " + CHROMIUM + " and " + CHROMEDRIVER
        + " (Debian: apt-get install chromium chromium-driver)";
    if ("true".equalsIgnoreCase(System.getenv("CI"))) {
      throw new IllegalStateException("CI=true and " + why);
    }
    System.err.println("[notes-service] SKIPPED: " + why);
    Assumptions.abort(why);
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;

  ChromeDriverService service;
  ChromeDriver driver;
  Path profile;
  String testName;

  @BeforeEach
  void startBrowser(TestInfo info) throws IOException {
    testName = info.getTestMethod().map(m -> m.getName()).orElse("test");
    jdbc.update("DELETE FROM notes");
    jdbc.update("DELETE FROM idem_keys");
    profile = Files.createTempDirectory("notes-chromium-");
    service = new ChromeDriverService.Builder()
        .usingDriverExecutable(CHROMEDRIVER)
        .usingAnyFreePort()
        .build();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM);
    options.addArguments(
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--window-size=1000,800",
        "--user-data-dir=" + profile);
    driver = new ChromeDriver(service, options);
    driver.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(30));
  }

  @AfterEach
  void stopBrowser() throws IOException {
    try {
      if (driver != null) {
        screenshot("final");
        driver.quit();
      }
    } finally {
      if (service != null) {
        service.stop();
      }
      deleteTree(profile);
    }
  }

  // ---- the tests ----

  @Test
  void oneClickWhoseResponseIsLostSavesOneNoteAndShowsTheReplay() throws Exception {
    try (FaultProxy proxy = FaultProxy.builder()
        .target("127.0.0.1", port)
        .fault(FIRST_POST, Fault.LOSE_RESPONSE)
        .start()) {
      openThrough(proxy);

      driver.findElement(By.id("title")).sendKeys("Read later: idempotency keys");
      driver.findElement(By.id("save")).click();
      WebElement status = awaitStatus("saved", Duration.ofSeconds(30));

      // The service, not the page, is the judge: one note.
      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM notes", Long.class)).isEqualTo(1);
      long id = jdbc.queryForObject("SELECT id FROM notes", Long.class);
      assertThat(Api.at(port).get("/notes").body()).isEqualTo("[{\"id\":" + id + ",\"title\":\"Read later: idempotency keys\"}]");

      // The page shows the note and says the answer was a replay.
      assertThat(status.getDomAttribute("data-replayed")).isEqualTo("true");
      assertThat(status.getText()).contains("#" + id).contains("replayed");
      assertThat(noteItems()).containsExactly("#" + id + " Read later: idempotency keys");
      assertThat(pendingSave()).isNull();
      System.out.println("[notes-service] page attempts: " + status.getDomAttribute("data-attempts"));

      // The fault hit the POST: the service answered 201, the page never saw it; a later POST
      // with the same key got the stored 201.
      List<LoggedRequest> posts = posts(proxy);
      assertThat(posts).hasSizeGreaterThanOrEqualTo(2);
      LoggedRequest lost = posts.get(0);
      assertThat(lost.number()).isEqualTo(FIRST_POST);
      assertThat(lost.fault()).isEqualTo(Fault.LOSE_RESPONSE);
      assertThat(lost.status()).isEqualTo(OptionalInt.of(201));
      assertThat(lost.delivered()).isFalse();
      assertThat(lost.idempotencyKey()).isPresent();
      LoggedRequest answered = posts.get(posts.size() - 1);
      assertThat(answered.delivered()).isTrue();
      assertThat(answered.status()).isEqualTo(OptionalInt.of(201));
      assertThat(posts).allSatisfy(p -> assertThat(p.idempotencyKey()).isEqualTo(lost.idempotencyKey()));
    }
  }

  @Test
  void thePagesOwnRetriesOutlastRepeatedLosses() throws Exception {
    // Chromium's network stack itself re-sends a request (a bounded number of times) when a
    // reused keep-alive connection is reset before any answer: that is what finishes the one-click
    // test above without the page noticing (its status says 1 attempt), and it is why the key
    // matters even without a retry loop. Three lost answers in a row are more than that re-send
    // absorbs, so fetch() rejects and the page's own retry loop (same key, backoff) finishes.
    try (FaultProxy proxy = FaultProxy.builder()
        .target("127.0.0.1", port)
        .fault(FIRST_POST, Fault.LOSE_RESPONSE)
        .fault(FIRST_POST + 1, Fault.LOSE_RESPONSE)
        .fault(FIRST_POST + 2, Fault.LOSE_RESPONSE)
        .start()) {
      openThrough(proxy);

      driver.findElement(By.id("title")).sendKeys("Third time lucky");
      driver.findElement(By.id("save")).click();
      WebElement status = awaitStatus("saved", Duration.ofSeconds(45));

      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM notes", Long.class)).isEqualTo(1);
      assertThat(Integer.parseInt(status.getDomAttribute("data-attempts")))
          .as("the page's own attempts (status: %s)", status.getText())
          .isGreaterThanOrEqualTo(2);
      assertThat(status.getDomAttribute("data-replayed")).isEqualTo("true");
      long id = jdbc.queryForObject("SELECT id FROM notes", Long.class);
      assertThat(noteItems()).containsExactly("#" + id + " Third time lucky");

      List<LoggedRequest> posts = posts(proxy);
      assertThat(posts).allSatisfy(p -> assertThat(p.idempotencyKey()).isEqualTo(posts.get(0).idempotencyKey()));
      // The three lost answers fell on the POSTs and on the page's key status questions between
      // them (GET /idempotency-keys/{key}): every lost POST had been answered 201 by the service.
      List<LoggedRequest> lost = proxy.log().stream().filter(r -> r.fault() == Fault.LOSE_RESPONSE).toList();
      assertThat(lost).hasSize(3).allSatisfy(r -> {
        if (r.method().equals("POST")) {
          assertThat(r.status()).isEqualTo(OptionalInt.of(201));
        } else {
          assertThat(r.target()).startsWith("/idempotency-keys/" + posts.get(0).idempotencyKey().orElseThrow());
        }
      });
      assertThat(lost.get(0).method()).isEqualTo("POST");
      // After fetch() gave up, the page asked the key status before it resent.
      assertThat(statusQuestions(proxy)).as("the page's key status questions in %s", proxy.log()).isNotEmpty();
      System.out.println("[notes-service] page attempts: " + status.getDomAttribute("data-attempts") + ", POSTs seen by the proxy: " + posts.size());
    }
  }

  @Test
  void aReloadWhileASaveIsPendingResumesItWithTheSameKey() throws Exception {
    try (FaultProxy proxy = FaultProxy.builder()
        .target("127.0.0.1", port)
        .fault(FIRST_POST, Fault.LOSE_RESPONSE)                      // saved, answer lost
        .fault(FIRST_POST + 1, Fault.delay(Duration.ofSeconds(20)))  // the retry hangs
        .start()) {
      openThrough(proxy);

      driver.findElement(By.id("title")).sendKeys("Survives a reload");
      driver.findElement(By.id("save")).click();

      // Wait until the retry is held by the proxy: the save is pending, the note already exists.
      new WebDriverWait(driver, Duration.ofSeconds(15)).until(d -> proxy.requestsSeen() >= FIRST_POST + 1);
      assertThat(proxy.await(1, Duration.ofSeconds(5))).isTrue();
      String key = posts(proxy).get(0).idempotencyKey().orElseThrow();
      assertThat(pendingSave()).contains(key).contains("Survives a reload");
      assertThat(driver.findElement(By.id("status")).getDomAttribute("data-state")).isEqualTo("saving");
      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM notes", Long.class)).isEqualTo(1);

      driver.navigate().refresh(); // the user gives up waiting and reloads

      WebElement status = awaitStatus("saved", Duration.ofSeconds(30));
      assertThat(status.getDomAttribute("data-resumed")).isEqualTo("true");
      assertThat(status.getDomAttribute("data-replayed")).isEqualTo("true");
      assertThat(status.getText()).contains("replayed").contains("Resumed");
      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM notes", Long.class)).isEqualTo(1);
      long id = jdbc.queryForObject("SELECT id FROM notes", Long.class);
      assertThat(noteItems()).containsExactly("#" + id + " Survives a reload");
      assertThat(pendingSave()).isNull();

      // The resumed save used the key made before the reload.
      LoggedRequest resumed = posts(proxy).stream()
          .filter(p -> p.number() > FIRST_POST + 1 && p.delivered())
          .findFirst().orElseThrow(() -> new AssertionError("no resumed POST in " + proxy.log()));
      assertThat(resumed.idempotencyKey()).isEqualTo(Optional.of(key));
      assertThat(resumed.status()).isEqualTo(OptionalInt.of(201));

      // Before resending, the reloaded page asked the key status, which said "completed".
      LoggedRequest asked = statusQuestions(proxy).stream().filter(r -> r.number() > FIRST_POST + 1).findFirst()
          .orElseThrow(() -> new AssertionError("no key status question after the reload in " + proxy.log()));
      assertThat(asked.target()).startsWith("/idempotency-keys/" + key + "?operation=POST%20%2Fnotes");
      assertThat(asked.status()).isEqualTo(OptionalInt.of(200));
      assertThat(asked.number()).isLessThan(resumed.number());
      assertThat(status.getDomAttribute("data-settled")).isEqualTo("completed");
    }
  }

  // ---- helpers ----

  /** Loads the page through the proxy and waits until it is ready, after exactly 4 requests. */
  private void openThrough(FaultProxy proxy) throws InterruptedException {
    driver.get(proxy.uri().toString());
    awaitStatus("ready", Duration.ofSeconds(15));
    assertThat(proxy.await(PAGE_LOAD_REQUESTS, Duration.ofSeconds(5))).isTrue();
    assertThat(proxy.requestsSeen())
        .as("requests before the first save (the fault rules count on it): %s", proxy.log())
        .isEqualTo(PAGE_LOAD_REQUESTS);
    assertThat(proxy.log()).allSatisfy(r -> assertThat(r.method()).isEqualTo("GET"));
  }

  private WebElement awaitStatus(String state, Duration timeout) {
    WebElement status = new WebDriverWait(driver, timeout)
        .withMessage(() -> "status line never reached '" + state + "'; it says: " + statusText())
        .until(d -> {
          WebElement s = d.findElement(By.id("status"));
          return state.equals(s.getDomAttribute("data-state")) ? s : null;
        });
    return status;
  }

  private String statusText() {
    try {
      WebElement s = driver.findElement(By.id("status"));
      return s.getDomAttribute("data-state") + ": " + s.getText();
    } catch (RuntimeException e) {
      return "(no status: " + e + ")";
    }
  }

  private List<String> noteItems() {
    return driver.findElements(By.cssSelector("#notes li")).stream().map(WebElement::getText).toList();
  }

  private String pendingSave() {
    return (String) ((JavascriptExecutor) driver).executeScript("return localStorage.getItem('notes.pendingSave');");
  }

  private static List<LoggedRequest> posts(FaultProxy proxy) {
    proxy.log().forEach(r -> System.out.println("[notes-service] proxy: " + r));
    return proxy.log().stream().filter(r -> r.method().equals("POST") && r.target().equals("/notes")).toList();
  }

  /** @return the page's key status questions (GET /idempotency-keys/...), in order */
  private static List<LoggedRequest> statusQuestions(FaultProxy proxy) {
    return proxy.log().stream().filter(r -> r.method().equals("GET") && r.target().startsWith("/idempotency-keys/")).toList();
  }

  /** Keeps a picture of the page in target/browser-screenshots, for a person to look at. */
  private void screenshot(String label) {
    try {
      Path out = Path.of("target", "browser-screenshots");
      Files.createDirectories(out);
      byte[] png = ((TakesScreenshot) driver).getScreenshotAs(OutputType.BYTES);
      Files.write(out.resolve(testName + "-" + label + ".png"), png);
    } catch (IOException | RuntimeException e) {
      System.err.println("[notes-service] no screenshot: " + e);
    }
  }

  private static void deleteTree(Path root) throws IOException {
    if (root == null || !Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
