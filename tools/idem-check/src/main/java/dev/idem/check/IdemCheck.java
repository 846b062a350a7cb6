package dev.idem.check;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Exercises one create endpoint of a running HTTP API and gives a verdict per {@link CheckName
 * check}: a response lost after the commit (through a {@link dev.idem.faultproxy.FaultProxy}),
 * concurrent duplicates, a key reused with different content, a control that proves the counting
 * can see a duplicate, the IETF draft's details and the sanity of the fingerprint. The command
 * {@code idem check} runs the same code.
 *
 * <pre>{@code
 * CheckReport report = IdemCheck.builder(URI.create("http://127.0.0.1:8080/notes"))
 *     .body("{\"title\":\"check-{{uuid}}\"}")
 *     .countUrl(URI.create("http://127.0.0.1:8080/notes"))   // a real count, not the answers
 *     .build()
 *     .run();
 * assertEquals(0, report.exitStatus(), report::toTable);
 * }</pre>
 *
 * <p><b>The body</b> is a template: {@code {{uuid}}} (required) becomes a fresh UUID for each
 * check, which makes each check's content unique and is the marker effects are counted by (the
 * control sends it under two keys, so both effects carry it); {@code {{key-uuid}}} (optional)
 * becomes a fresh UUID for each {@code Idempotency-Key}: every request with one key (a retry, a
 * concurrent duplicate) carries the same value, a request under another key (or none) another one.
 * Put it in a field the API keeps unique (an order number), so that the control's second key is a
 * second order and not a conflict with the first; {@code {{number}}} (optional) marks where the
 * API takes a JSON number, for the big-number check. Without it, that check (and the reorder check, if the body has a single
 * member) adds a member {@code "idem_check_number"} to a JSON object body; an API that refuses
 * unknown members then gets {@link Verdict#SKIPPED} for them.
 *
 * <p><b>Counting effects.</b> By default effects are counted from the answers (distinct {@code
 * Location} fields, else top-level {@code id} members, of the 2xx answers, including the lost one
 * as the proxy read it), which proves less: the report says so. {@link Builder#countUrl}, {@link
 * Builder#countSql} and {@link Builder#countWith} count what the API really stored, before and
 * after each check.
 *
 * <p><b>Bounds.</b> A run sends at most {@link #requestBound()} requests: the {@link
 * Builder#concurrency(int) concurrent} attempts, {@value Checks#SENDS_BESIDES_CONCURRENT} others,
 * and with a real count {@value Checks#COUNT_QUERIES} count queries. It never retries on its own,
 * except a lost-response retry that got 409 ({@value Checks#RETRIES_AFTER_409} more at most, after
 * {@code Retry-After}, capped at 5 s). Every effect it causes carries its marker; it deletes
 * nothing.
 *
 * <p>Plain {@code http} only for the lost-response check (the fault proxy does not speak TLS); the
 * proxy forwards the client's {@code Host} field, which names the proxy's address. Immutable and
 * thread-safe; each {@link #run()} is independent.
 */
public final class IdemCheck {

  /** One fresh UUID per check: the marker its effects are counted by. */
  private static final String UUID_PLACEHOLDER = "{{uuid}}";
  /** One fresh UUID per Idempotency-Key: the same in every request with that key. */
  private static final String KEY_UUID = "{{key-uuid}}";

  private final URI target;
  private final String method;
  private final String template;
  private final List<Map.Entry<String, String>> headers;
  private final int concurrency;
  private final Duration settle;
  private final Duration timeout;
  private final CountingSpec counting;

  private IdemCheck(Builder b) {
    this.target = b.target;
    this.method = b.method;
    this.template = b.template;
    this.headers = List.copyOf(b.headers);
    this.concurrency = b.concurrency;
    this.settle = b.settle;
    this.timeout = b.timeout;
    this.counting = b.counting;
  }

  /**
   * Starts configuring a check of one create endpoint.
   *
   * @param target the endpoint's absolute {@code http} or {@code https} URL, for example {@code
   *     http://127.0.0.1:8080/notes}
   * @return a builder
   * @throws NullPointerException if {@code target} is {@code null}
   * @throws IllegalArgumentException if {@code target} is not an absolute http(s) URL with a host
   */
  public static Builder builder(URI target) {
    return new Builder(target);
  }

  /**
   * Runs every check, in the order of {@link CheckName}, one after the other.
   *
   * @return the report; never {@code null}
   * @throws ApiUnreachableException if the API cannot be reached (before or during the run)
   * @throws InterruptedException if the calling thread is interrupted
   */
  public CheckReport run() throws ApiUnreachableException, InterruptedException {
    preflight();
    long started = System.nanoTime();
    Exchange exchange = new Exchange(method, headers, timeout, requestBound());
    Counting c = counting.counting();
    Map<CheckName, CheckResult> results = new Checks(this, exchange, c).runAll();
    return new CheckReport(method + " " + target, c.real, c.description, new ArrayList<>(results.values()),
        exchange.sends(), exchange.countRequests(), requestBound(), concurrency,
        Duration.ofNanos(System.nanoTime() - started));
  }

  /**
   * @return the most requests one run sends: the concurrent attempts, {@value
   *     Checks#SENDS_BESIDES_CONCURRENT} others and, with a real count, {@value
   *     Checks#COUNT_QUERIES} count queries
   */
  public int requestBound() {
    return concurrency + Checks.SENDS_BESIDES_CONCURRENT + (counting.real() ? Checks.COUNT_QUERIES : 0);
  }

  /** Opens and closes one TCP connection, so that an API that is not there is told apart at once. */
  private void preflight() throws ApiUnreachableException {
    int port = target.getPort() > 0 ? target.getPort() : "https".equalsIgnoreCase(target.getScheme()) ? 443 : 80;
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(target.getHost(), port), (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    } catch (IOException e) {
      throw new ApiUnreachableException("cannot reach " + target.getHost() + ":" + port + ": " + e.getMessage(), e);
    }
  }

  URI target() {
    return target;
  }

  Duration settle() {
    return settle;
  }

  Duration timeout() {
    return timeout;
  }

  int concurrency() {
    return concurrency;
  }

  boolean hasNumberPlaceholder() {
    return template.contains("{{number}}");
  }

  boolean hasKeyPlaceholder() {
    return template.contains(KEY_UUID);
  }

  /**
   * @return the body of one request: the check's marker for {@code {{uuid}}}, the key's value for
   *     {@code {{key-uuid}}}, the literal for {@code {{number}}}; the same arguments give the same bytes
   */
  String render(String marker, String keyValue, String number) {
    return template.replace(KEY_UUID, keyValue).replace(UUID_PLACEHOLDER, marker).replace("{{number}}", number);
  }


  /** How to count, decided by the builder; the URL counter needs the run's exchange. */
  private interface CountingSpec {
    boolean real();

    Counting counting();
  }

  /**
   * Configures an {@link IdemCheck}. Setters validate their argument at once. Not thread-safe.
   */
  public static final class Builder {
    private final URI target;
    private String method = "POST";
    private String template;
    private final List<Map.Entry<String, String>> headers = new ArrayList<>();
    private int concurrency = 8;
    private Duration settle = Duration.ofSeconds(1);
    private Duration timeout = Duration.ofSeconds(30);
    private CountingSpec counting = new CountingSpec() {
      @Override
      public boolean real() {
        return false;
      }

      @Override
      public Counting counting() {
        return Counting.fromAnswers();
      }
    };

    private Builder(URI target) {
      this.target = checkUrl(target, "target");
    }

    private static URI checkUrl(URI url, String what) {
      Objects.requireNonNull(url, what);
      String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
      if (!url.isAbsolute() || !(scheme.equals("http") || scheme.equals("https")) || url.getHost() == null) {
        throw new IllegalArgumentException(what + " must be an absolute http or https URL with a host, was " + url);
      }
      return url;
    }

    /**
     * Sets the method of the create request. Default {@code POST}.
     *
     * @param method {@code POST}, {@code PUT} or {@code PATCH} (case-insensitive)
     * @return this builder
     * @throws IllegalArgumentException for another method
     */
    public Builder method(String method) {
      String m = Objects.requireNonNull(method, "method").trim().toUpperCase(Locale.ROOT);
      if (!List.of("POST", "PUT", "PATCH").contains(m)) {
        throw new IllegalArgumentException("the method must be POST, PUT or PATCH, was " + method);
      }
      this.method = m;
      return this;
    }

    /**
     * Sets the body template (required).
     *
     * @param template the body, with {@code {{uuid}}} at least once (for example in a title),
     *     optionally {@code {{key-uuid}}} in a field the API keeps unique (one value per key, the
     *     same in every retry) and {@code {{number}}} where the API takes a JSON number; sent as UTF-8
     * @return this builder
     * @throws IllegalArgumentException if {@code {{uuid}}} is missing
     */
    public Builder body(String template) {
      Objects.requireNonNull(template, "template");
      if (!template.contains(UUID_PLACEHOLDER)) {
        throw new IllegalArgumentException("the body must contain {{uuid}}: each operation needs content of its own"
            + " (for the key-reuse check) and a marker to count its effects by, for example"
            + " {\"title\":\"check-{{uuid}}\"}" + (template.contains(KEY_UUID)
                ? "; {{key-uuid}} changes with the key, so it cannot mark one check's effects: use both, for example"
                    + " {\"number\":\"{{key-uuid}}\",\"note\":\"check-{{uuid}}\"}"
                : ""));
      }
      this.template = template;
      return this;
    }

    /**
     * Adds a header field to every request (the create request and a count URL), for example for
     * authentication. {@code Content-Type} replaces the default {@code application/json}.
     *
     * @param name the field name
     * @param value the field value
     * @return this builder
     * @throws IllegalArgumentException for {@code Idempotency-Key} (the checker sets it) and for
     *     the fields the HTTP client sets itself (Host, Connection, Content-Length, Expect, Upgrade)
     */
    public Builder header(String name, String value) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
      String n = name.trim();
      if (n.isEmpty() || !n.matches("[!#$%&'*+\\-.^_`|~0-9A-Za-z]+")) {
        throw new IllegalArgumentException("not a header field name: '" + name + "'");
      }
      if (n.equalsIgnoreCase("Idempotency-Key")) {
        throw new IllegalArgumentException("the checker sets Idempotency-Key itself");
      }
      if (Exchange.RESTRICTED.contains(n.toLowerCase(Locale.ROOT))) {
        throw new IllegalArgumentException("the HTTP client sets " + n + " itself");
      }
      if (value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0) {
        throw new IllegalArgumentException("a header value must not contain CR or LF");
      }
      headers.add(Map.entry(n, value.trim()));
      return this;
    }

    /**
     * Sets how many attempts with one key the concurrent-duplicates check releases together.
     * Default 8.
     *
     * @param n 2 to 64
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder concurrency(int n) {
      if (n < 2 || n > 64) {
        throw new IllegalArgumentException("concurrency must be between 2 and 64, was " + n);
      }
      this.concurrency = n;
      return this;
    }

    /**
     * Sets the pause between a first request and the second one with the same key in the
     * key-reuse and fingerprint checks, so that they test a key the API has finished with.
     * The lost-response check retries at once (the moment a key stored late fails). Default 1 s.
     *
     * @param settle zero to 60 seconds
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder settle(Duration settle) {
      Objects.requireNonNull(settle, "settle");
      if (settle.isNegative() || settle.compareTo(Duration.ofSeconds(60)) > 0) {
        throw new IllegalArgumentException("settle must be between 0 and 60 s, was " + settle);
      }
      this.settle = settle;
      return this;
    }

    /**
     * Sets the timeout of every request and of connecting. Default 30 s.
     *
     * @param timeout 1 ms to 10 minutes
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder timeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.compareTo(Duration.ofMillis(1)) < 0 || timeout.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException("timeout must be between 1 ms and 10 minutes, was " + timeout);
      }
      this.timeout = timeout;
      return this;
    }

    /**
     * Counts effects through a GET (with the {@link #header headers}) whose answer is a JSON array:
     * its elements whose JSON text contains the operation's marker. A real count, as long as the
     * listing shows the content the marker is in and is not paginated away.
     *
     * @param url the listing's absolute http(s) URL
     * @return this builder
     */
    public Builder countUrl(URI url) {
      return countUrl(url, true);
    }

    /**
     * Counts effects through a GET (with the {@link #header headers}) whose answer is a JSON array
     * or an object with a numeric {@code total} member.
     *
     * @param url the listing's absolute http(s) URL
     * @param byMarker {@code true}: count the array's elements that contain the marker; {@code
     *     false}: the array's length or {@code total}, so that other traffic on the API is counted
     *     too (run the check alone)
     * @return this builder
     */
    public Builder countUrl(URI url, boolean byMarker) {
      URI u = checkUrl(url, "count URL");
      String how = byMarker
          ? "through GET " + u + ": the elements of its JSON array that contain the operation's marker, before and after each check"
          : "through GET " + u + ": its JSON array's length or \"total\", before and after each check (other traffic counts too)";
      this.counting = real(how, (exchange, marker) -> exchange.countByUrl(u, marker, byMarker));
      return this;
    }

    /**
     * Counts effects with one SQL query on a JDBC URL, before and after each check. Every {@code
     * ?} parameter is bound to the operation's marker, for example {@code SELECT COUNT(*) FROM
     * notes WHERE title LIKE '%' || ? || '%'}; the first column of the first row is the count. The
     * JDBC driver must be on the class path.
     *
     * @param jdbcUrl the database, for example {@code jdbc:postgresql://127.0.0.1:5432/app?user=app}
     * @param query a query returning one number
     * @return this builder
     */
    public Builder countSql(String jdbcUrl, String query) {
      Objects.requireNonNull(jdbcUrl, "jdbcUrl");
      Objects.requireNonNull(query, "query");
      if (!jdbcUrl.startsWith("jdbc:")) {
        throw new IllegalArgumentException("not a JDBC URL: " + redact(jdbcUrl));
      }
      if (query.isBlank()) {
        throw new IllegalArgumentException("the count query is empty");
      }
      String how = "with SQL on " + redact(jdbcUrl) + ": " + query.strip()
          + (query.contains("?") ? " (? = the operation's marker)" : "") + ", before and after each check";
      this.counting = real(how, (exchange, marker) -> {
        exchange.countedQuery();
        return sqlCount(jdbcUrl, query, marker);
      });
      return this;
    }

    /**
     * Counts effects with a function of the caller, before and after each check.
     *
     * @param description how it counts, for the report, for example {@code rows in notes with the marker in the title}
     * @param counter the count
     * @return this builder
     */
    public Builder countWith(String description, EffectCounter counter) {
      Objects.requireNonNull(description, "description");
      Objects.requireNonNull(counter, "counter");
      this.counting = real(description, (exchange, marker) -> {
        exchange.countedQuery();
        return counter.count(marker);
      });
      return this;
    }

    private static CountingSpec real(String description, Counting.Source source) {
      return new CountingSpec() {
        @Override
        public boolean real() {
          return true;
        }

        @Override
        public Counting counting() {
          return Counting.real(description, source);
        }
      };
    }

    /**
     * @return the configured check
     * @throws IllegalStateException if no {@link #body(String) body} was set
     */
    public IdemCheck build() {
      if (template == null) {
        throw new IllegalStateException("no body: call body(template), for example {\"title\":\"check-{{uuid}}\"}");
      }
      return new IdemCheck(this);
    }
  }

  private static long sqlCount(String jdbcUrl, String query, String marker) throws Exception {
    try (Connection c = DriverManager.getConnection(jdbcUrl);
        PreparedStatement ps = c.prepareStatement(query)) {
      int parameters = ps.getParameterMetaData().getParameterCount();
      for (int i = 1; i <= parameters; i++) {
        ps.setString(i, marker);
      }
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new IllegalStateException("the count query returned no row");
        }
        return rs.getLong(1);
      }
    }
  }

  /** @return the JDBC URL with any password replaced by {@code ***} */
  static String redact(String jdbcUrl) {
    return jdbcUrl.replaceAll("(?i)(password=)[^&;]*", "$1***").replaceAll("//([^/@:]+):[^/@]*@", "//$1:***@");
  }
}
