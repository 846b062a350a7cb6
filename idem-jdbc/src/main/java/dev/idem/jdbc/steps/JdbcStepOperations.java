package dev.idem.jdbc.steps;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseContext;
import dev.idem.core.LeaseLostException;
import dev.idem.core.Outcome;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.core.steps.DerivedKeys;
import dev.idem.core.steps.StepOperation;
import dev.idem.core.steps.Steps;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.jdbc.SchemaCreation;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Runs {@link StepOperation}s of named steps under one idempotency key, on one database:
 *
 * <ul>
 *   <li><b>The claim</b> is a lease-mode claim of the key table ({@link JdbcLeaseStore}): a new key
 *       runs; a completed one replays its stored final response; one whose lease another run holds
 *       is {@link RequestInProgressException}; one whose lease ran out is taken over and resumed.
 *   <li><b>The step table</b> (default {@code idem_steps}, primary key principal, operation, key,
 *       step) holds the operation's input and fingerprint (step {@code "#input"}, which no step name
 *       can be) and one row per recorded step, its result being the recovery point.
 *   <li><b>A local step</b> is one transaction: its writes, its row, and a conditional renewal of
 *       the lease by this run's owner token, which fails (rolling everything back, {@link
 *       LeaseLostException}) when another run took the operation over.
 *   <li><b>A foreign call</b> runs outside transactions with {@link DerivedKeys#of}, then its
 *       answer is recorded as a local step without writes.
 *   <li><b>The final response</b> completes the claim (fenced by the owner token) and is replayed
 *       to every later request with the key.
 *   <li>A run that stops (an exception, a crash) before any step was recorded releases the claim;
 *       after a step it keeps the claim, so that a retry after the lease, or {@link
 *       #completeAbandoned}, resumes after the last recovery point.
 * </ul>
 *
 * <p>Immutable after {@link Builder#build()} and thread-safe.
 */
public final class JdbcStepOperations implements KeyStatusReader {

  /** The step table used when {@link Builder#stepTable} is not called: {@value}. */
  public static final String DEFAULT_STEP_TABLE = "idem_steps";

  private static final System.Logger LOG = System.getLogger(JdbcStepOperations.class.getName());
  private static final String INPUT_STEP = "#input";
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}");

  private final DataSource dataSource;
  private final JdbcLeaseStore keys;
  private final String keyTable;
  private final String stepTable;
  private final Duration lease;
  private final Duration retention;
  private final boolean createSchema;
  private final TraceContextPropagation tracing;
  private final boolean keepTraceContext;
  private volatile boolean schemaReady;
  /** The step table's writes and reads for one run, fenced by the key's lease. */
  private final StepTable table;

  private JdbcStepOperations(Builder b) {
    this.dataSource = b.dataSource;
    this.keyTable = b.keyTable;
    this.stepTable = b.stepTable;
    this.lease = b.lease;
    this.retention = b.retention;
    this.tracing = b.tracing;
    this.keepTraceContext = b.keepTraceContext;
    this.createSchema = b.createSchema;
    this.table = new StepTable(b.dataSource, b.keyTable, b.stepTable, b.lease, b.retention);
    this.keys = JdbcLeaseStore.builder(b.dataSource).table(b.keyTable).createSchema(b.createSchema).build();
  }

  /**
   * @param dataSource where connections come from, never {@code null}
   * @return a builder: key table {@code idem_keys}, step table {@value #DEFAULT_STEP_TABLE}, lease
   *     30 s, retention 24 h, tables created on first use
   */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** @return the key table, whose claims these operations take (shared with lease and transactional mode) */
  public JdbcLeaseStore keys() {
    return keys;
  }

  /**
   * Runs {@code operation} for the request's scope and key: the first run, a resume after the last
   * recovery point, or a replay of the stored final response (see the class description).
   *
   * @param request scope, key and fingerprint of the whole operation, never {@code null}
   * @param input the operation's input, recorded at the first run and given to every run, never
   *     {@code null}; at most 16 MiB
   * @param operation the steps, never {@code null}
   * @return executed now (with {@link Outcome#recovery()} when it resumed) or replayed
   * @throws IdempotencyKeyReusedException if the key was used with another fingerprint
   * @throws RequestInProgressException if another run holds the operation's lease
   * @throws LeaseLostException if another run took the operation over while this one ran
   * @throws IdemStoreException if the database fails
   * @throws Exception what a step or the body threw; the steps recorded before stay recorded
   */
  public Outcome execute(IdempotentRequest request, byte[] input, StepOperation operation) throws Exception {
    Objects.requireNonNull(request, "request");
    checkArguments(input, operation);
    ensureSchema();
    String owner = UUID.randomUUID().toString();
    ClaimResult claim = keys.claim(request, owner, lease, retention);
    if (!claim.fingerprint().equals(request.fingerprint())) {
      throw new IdempotencyKeyReusedException(request.scope(), request.key());
    }
    switch (claim.state()) {
      case COMPLETED:
        // a completed claim always carries its response (ClaimResult.completed requires it)
        return Outcome.replayed(Objects.requireNonNull(claim.response(), "response"));
      case IN_PROGRESS:
        throw new RequestInProgressException(request.key(), claim.leaseRemaining().isZero() ? Duration.ofSeconds(1) : claim.leaseRemaining());
      default:
        break;
    }
    return run(request, owner, input, operation, claim.recovery());
  }

  /**
   * Runs {@code operation}'s steps under a claim that the caller already holds on this key table:
   * the lease-mode claim of the servlet filter ({@code IdempotencyFilter.leaseContext(request)}),
   * of an {@code @Idempotent} method ({@code
   * IdempotentCalls.currentLeaseContext()}), or of any {@link
   * dev.idem.core.LeaseIdempotency} whose store is this key table ({@link #keys()}, or a {@link
   * JdbcLeaseStore} on the same table and data source). The caller's engine replays a completed key
   * before the effect runs and stores the response returned here when it completes the claim; this
   * method records the input and the steps, and resumes after the last recovery point when the
   * claim is a recovery (or finds steps recorded under it).
   *
   * <p>A run that fails after a step was recorded hands the claim over (its owner token replaced,
   * its lease ended), so that the engine's release cannot free the key and run the operation from
   * the start: a retry with the same key takes it over at once and resumes, and {@link
   * #completeAbandoned} finishes it if no retry comes. It then throws {@link
   * OutcomeUnknownException} with {@link OutcomeUnknownException.Phase#PARTIAL}, which the filter
   * and the starter answer 503 with {@code Retry-After}. A run that fails before any step throws
   * what it threw, and the engine releases the key as for any failed effect.
   *
   * @param claim the caller's claim: scope, key, owner token, recovery; never {@code null} (in
   *     transactional mode there is none: a step operation cannot run inside one transaction)
   * @param input the operation's input (for HTTP, the request body), recorded at the first run, given
   *     to every run and to the completer; never {@code null}, at most 16 MiB
   * @param operation the steps, never {@code null}; the completer needs the same body registered
   *     under the scope's operation name
   * @return the final response, for the caller's engine to store; never {@code null}
   * @throws IllegalStateException if this key table holds no claim in progress for the key: the
   *     engine's store is another table
   * @throws IdempotencyKeyReusedException if steps were recorded under the key for another fingerprint
   * @throws LeaseLostException if another run took the operation over while this one ran
   * @throws OutcomeUnknownException if the operation failed after a recorded step (its cause is the
   *     failure)
   * @throws IdemStoreException if the database fails
   * @throws Exception what a step or the body threw before any step was recorded
   */
  public StoredResponse runClaimed(LeaseContext claim, byte[] input, StepOperation operation) throws Exception {
    Objects.requireNonNull(claim, "claim is null: there is no lease-mode claim here (behind the servlet filter, run the route"
        + " in lease mode, idem.mode=lease; call an @Idempotent method outside a transaction)");
    checkArguments(input, operation);
    ensureSchema();
    if (!(keys.status(claim.scope(), claim.key()) instanceof KeyStatus.InProgress running)) {
      throw new IllegalStateException("no claim in progress for this idempotency key in key table " + keyTable
          + ": the lease engine's store must be this key table (JdbcStepOperations.keys(), or a JdbcLeaseStore on the same table)");
    }
    IdempotentRequest request = new IdempotentRequest(claim.scope(), claim.key(), running.fingerprint());
    RunSteps steps = start(request, claim.ownerToken(), input, claim.recovery());
    try {
      return Objects.requireNonNull(runTraced(request, steps, operation), "the operation returned null");
    } catch (LeaseLostException e) {
      throw e; // another run holds it now
    } catch (Exception e) {
      if (!steps.anyRecorded()) {
        throw e;
      }
      handOver(request, claim.ownerToken(), e);
      throw new OutcomeUnknownException(claim.key(), Duration.ofSeconds(1), OutcomeUnknownException.Phase.PARTIAL, e);
    } catch (Error e) {
      if (steps.anyRecorded()) {
        handOver(request, claim.ownerToken(), e);
      }
      throw e;
    }
  }

  private static void checkArguments(byte[] input, StepOperation operation) {
    Objects.requireNonNull(input, "input");
    Objects.requireNonNull(operation, "operation");
    if (input.length > 16 << 20) {
      throw new IllegalArgumentException("the input must be at most 16 MiB, was " + input.length + " bytes");
    }
  }

  private Outcome run(IdempotentRequest request, String owner, byte[] input, StepOperation operation, boolean recovery)
      throws Exception {
    RunSteps steps = start(request, owner, input, recovery);
    StoredResponse response;
    try {
      response = Objects.requireNonNull(runTraced(request, steps, operation), "the operation returned null");
    } catch (Exception | Error e) {
      if (!steps.anyRecorded()) {
        release(request, owner);
      }
      throw e;
    }
    if (!keys.complete(request.scope(), request.key(), owner, response, retention)) {
      throw new LeaseLostException(request.key(), "complete");
    }
    return Outcome.executed(response, true, steps.resumed());
  }

  /**
   * Runs the operation's body; a resumption of an operation whose input was recorded with a trace
   * context runs in a span linked to it ({@link TraceContextPropagation#resumeLinked}).
   */
  private StoredResponse runTraced(IdempotentRequest request, RunSteps steps, StepOperation operation) throws Exception {
    if (!steps.resumed() || steps.firstAttempt.isEmpty() || tracing == TraceContextPropagation.NONE) {
      return operation.run(steps, steps.input);
    }
    try {
      return tracing.resumeLinked(request.scope().operation(), steps.firstAttempt, () -> {
        try {
          return operation.run(steps, steps.input);
        } catch (RuntimeException e) {
          throw e;
        } catch (Exception e) {
          throw new CheckedFailure(e);
        }
      });
    } catch (CheckedFailure f) {
      throw f.checked;
    }
  }

  /** Carries a body's checked exception through the tracing's {@code Supplier}, to be thrown as it was. */
  private static final class CheckedFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    @SuppressWarnings("serial") // never serialized: caught in runTraced
    final Exception checked;

    CheckedFailure(Exception checked) {
      super(checked);
      this.checked = checked;
    }
  }

  /** Reads what earlier runs recorded (or clears a stale operation's rows) and records the input. */
  private RunSteps start(IdempotentRequest request, String owner, byte[] input, boolean recovery) throws Exception {
    Map<String, String> recorded = table.recorded(request.scope(), request.key());
    if (!recovery && !recorded.isEmpty()
        && (recorded.keySet().equals(java.util.Set.of(INPUT_STEP)) || !recordedWithinRetention(request))) {
      // A new claim over the rows of a run that failed before its first step (its key was
      // released), or of an operation whose key record expired without completing: after the
      // retention the key is a new operation, and those steps are not its. Steps younger than the
      // retention under a new claim are this operation's: its key was freed after they were
      // recorded (behind a lease engine, by a final answer its response policy does not store,
      // such as a 503), and the run resumes after them instead of recording them again.
      deleteSteps(request);
      recorded.clear();
    }
    byte[] theInput = input;
    Map<String, String> firstAttempt = Map.of();
    String storedInput = recorded.remove(INPUT_STEP);
    if (storedInput != null) {
      InputRecord record = InputRecord.parse(storedInput);
      if (!record.fingerprintHex().equals(request.fingerprint().hex())) {
        throw new IdempotencyKeyReusedException(request.scope(), request.key());
      }
      theInput = record.input();
      firstAttempt = record.traceContext();
    } else {
      table.record(request, owner, INPUT_STEP,
          InputRecord.format(request.fingerprint().hex(), input,
              keepTraceContext ? TraceContextPropagation.currentContextOrEmpty(tracing) : Map.of()), null);
    }
    return new RunSteps(table, request, owner, recorded, theInput, firstAttempt, recovery || !recorded.isEmpty());
  }

  /** @return whether any row of the operation was recorded less than the retention ago (the database's clock) */
  private boolean recordedWithinRetention(IdempotentRequest request) {
    try (Connection c = table.connection();
        PreparedStatement ps = c.prepareStatement("SELECT 1 FROM " + stepTable + " WHERE principal = ? AND operation = ?"
            + " AND idem_key = ? AND created_at > " + Dialect.of(c).nowMillis() + " - ?")) {
      StepTable.bindKey(ps, request.scope(), request.key(), 1);
      ps.setLong(4, retention.toMillis());
      ps.setMaxRows(1);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    } catch (SQLException e) {
      throw table.failure("reading the age of the recorded steps", e);
    }
  }

  /**
   * Hands a claim whose run failed after a step over: a new owner token, the lease ended. Fenced by
   * the old token; a failure is added to {@code failure} (the claim then ends with its lease).
   */
  private void handOver(IdempotentRequest request, String owner, Throwable failure) {
    try (Connection c = table.connection();
        PreparedStatement ps = c.prepareStatement("UPDATE " + keyTable + " SET owner_token = ?, lease_until = "
            + Dialect.of(c).nowMillis() + " WHERE principal = ? AND operation = ? AND idem_key = ? AND owner_token = ?"
            + " AND state = 'IN_PROGRESS'")) {
      ps.setString(1, UUID.randomUUID().toString());
      StepTable.bindKey(ps, request.scope(), request.key(), 2);
      ps.setString(5, owner);
      ps.executeUpdate();
    } catch (SQLException | RuntimeException e) {
      failure.addSuppressed(e);
    }
  }

  private void release(IdempotentRequest request, String owner) {
    deleteSteps(request);
    keys.release(request.scope(), request.key(), owner);
  }

  private void deleteSteps(IdempotentRequest request) {
    try (Connection c = table.connection();
        PreparedStatement ps = c.prepareStatement("DELETE FROM " + stepTable + " WHERE principal = ? AND operation = ? AND idem_key = ?")) {
      StepTable.bindKey(ps, request.scope(), request.key(), 1);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw table.failure("deleting the steps of an operation", e);
    }
  }

  /**
   * The completer: finishes up to {@code max} operations whose run stopped after a recorded step and
   * whose lease has run out (their caller gave up), by taking each over and running its operation
   * again from its recorded input; each resumes after its last recovery point and stores its final
   * response, which the caller's retry then replays. Operations without a registered body are left
   * alone. Safe to run on several nodes at once: each operation is taken by one of them. An
   * operation that fails again is logged (as a warning, without its key) and left for a later pass.
   *
   * @param operations the bodies, by the scope's operation (such as {@code "POST /rides"}), never
   *     {@code null}
   * @param max 1 to 10 000
   * @return how many operations this call completed
   * @throws IdemStoreException if the database fails
   */
  public int completeAbandoned(Map<String, StepOperation> operations, int max) {
    Objects.requireNonNull(operations, "operations");
    if (max < 1 || max > 10_000) {
      throw new IllegalArgumentException("max must be between 1 and 10000, was " + max);
    }
    ensureSchema();
    List<Object[]> candidates = new ArrayList<>();
    try (Connection c = table.connection();
        PreparedStatement ps = c.prepareStatement("SELECT s.principal, s.operation, s.idem_key, s.result FROM " + stepTable + " s JOIN "
            + keyTable + " k ON k.principal = s.principal AND k.operation = s.operation AND k.idem_key = s.idem_key"
            + " WHERE s.step = ? AND k.state = 'IN_PROGRESS' AND k.lease_until <= " + Dialect.of(c).nowMillis()
            + " AND k.expires_at > " + Dialect.of(c).nowMillis())) {
      ps.setString(1, INPUT_STEP);
      ps.setMaxRows(max);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next() && candidates.size() < max) {
          candidates.add(new Object[] {rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)});
        }
      }
    } catch (SQLException e) {
      throw table.failure("finding abandoned operations", e);
    }
    int completed = 0;
    for (Object[] row : candidates) {
      StepOperation body = operations.get((String) row[1]);
      if (body == null) {
        continue;
      }
      try {
        InputRecord input = InputRecord.parse((String) row[3]);
        IdempotentRequest request = new IdempotentRequest(Scope.of((String) row[0], (String) row[1]), IdempotencyKey.of((String) row[2]),
            Fingerprint.fromHex(input.fingerprintHex()));
        Outcome outcome = execute(request, input.input(), body);
        if (!outcome.replayed()) {
          completed++;
        }
      } catch (RequestInProgressException | LeaseLostException e) {
        // another node, or the caller's retry, took it first
      } catch (Exception e) {
        // This operation failed again; the next pass tries again after its lease. Logged without
        // the key or the principal (logs carry neither), with the operation and the failure's class
        // (a message may quote the key).
        LOG.log(System.Logger.Level.WARNING, "step completer: an abandoned " + row[1] + " operation failed again and stays"
            + " in progress until the next pass after its lease: " + e.getClass().getName());
      }
    }
    return completed;
  }

  /**
   * {@inheritDoc}
   *
   * <p>The key table's status ({@link JdbcLeaseStore#status}); for an operation in progress, with
   * the name of its last recorded step as {@link KeyStatus.InProgress#step()} (the recovery point a
   * resume starts after), or {@code null} before its first step.
   */
  @Override
  public KeyStatus status(Scope scope, IdempotencyKey key) {
    KeyStatus status = keys.status(scope, key);
    if (!(status instanceof KeyStatus.InProgress running)) {
      return status;
    }
    ensureSchema();
    try (Connection c = table.connection();
        PreparedStatement ps = c.prepareStatement("SELECT step FROM " + stepTable + " WHERE principal = ? AND operation = ? AND idem_key = ?"
            + " AND step <> ? ORDER BY created_at DESC, step")) {
      StepTable.bindKey(ps, scope, key, 1);
      ps.setString(4, INPUT_STEP);
      ps.setMaxRows(1);
      try (ResultSet rs = ps.executeQuery()) {
        String step = rs.next() ? rs.getString(1) : null;
        return new KeyStatus.InProgress(running.fingerprint(), running.leaseUntil(), running.leaseRemaining(), step, running.expiresAt());
      }
    } catch (SQLException e) {
      throw table.failure("reading the last recorded step", e);
    }
  }

  /**
   * Creates the key table (through {@link JdbcLeaseStore#createSchema}) and the step table if they
   * are missing, then checks the key table as {@link dev.idem.jdbc.JdbcIdempotency#checkSchema}
   * does. Needed only with {@link Builder#createSchema(boolean) createSchema(false)}; otherwise the
   * first use creates both. Thread-safe, and safe when many processes create the tables at the same
   * moment: each is made once and no caller fails because another made it first ({@link
   * SchemaCreation}).
   *
   * @param connection an open connection; in auto-commit mode the tables are committed when this
   *     returns, otherwise they join the open transaction
   * @throws IdemStoreException if a statement fails, if another creator held a table's schema lock
   *     for longer than {@link SchemaCreation#LOCK_WAIT}, or the existing key table compares
   *     identities loosely
   */
  public void createSchema(Connection connection) {
    keys.createSchema(connection);
    String text = Dialect.of(connection).stepTableDdl(stepTable);
    try {
      SchemaCreation.run(connection, stepTable, List.of(text));
    } catch (SQLException e) {
      throw table.failure("creating table " + stepTable, e);
    }
  }

  /**
   * Deletes the steps of operations whose key record is gone (purged, released or expired) and whose
   * last step is older than the retention, at most {@code batchSize} operations per call. Younger
   * steps without a live key record are kept: they belong to an operation whose key was released
   * after a step (a final answer the lease engine's response policy does not store), and the next
   * request with the key resumes after them.
   *
   * @param batchSize 1 to 100 000 operations
   * @return how many step rows were deleted
   * @throws IllegalArgumentException if {@code batchSize} is out of range
   * @throws IdemStoreException if the database fails
   */
  public long purgeOrphanedSteps(int batchSize) {
    if (batchSize < 1 || batchSize > 100_000) {
      throw new IllegalArgumentException("batchSize must be between 1 and 100000, was " + batchSize);
    }
    ensureSchema();
    try (Connection c = table.connection()) {
      String now = Dialect.of(c).nowMillis();
      String noLiveKey = " NOT EXISTS (SELECT 1 FROM " + keyTable + " k WHERE k.principal = s.principal"
          + " AND k.operation = s.operation AND k.idem_key = s.idem_key AND k.expires_at > " + now + ")";
      List<String[]> orphans = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement("SELECT s.principal, s.operation, s.idem_key FROM " + stepTable + " s WHERE"
          + noLiveKey + " GROUP BY s.principal, s.operation, s.idem_key HAVING MAX(s.created_at) <= " + now + " - ?")) {
        ps.setLong(1, retention.toMillis());
        ps.setMaxRows(batchSize);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next() && orphans.size() < batchSize) {
            orphans.add(new String[] {rs.getString(1), rs.getString(2), rs.getString(3)});
          }
        }
      }
      long deleted = 0;
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + stepTable + " WHERE principal = ? AND operation = ?"
          + " AND idem_key = ? AND NOT EXISTS (SELECT 1 FROM " + keyTable + " k WHERE k.principal = ? AND k.operation = ?"
          + " AND k.idem_key = ? AND k.expires_at > " + now + ")")) {
        for (String[] o : orphans) {
          for (int i = 0; i < 6; i++) {
            ps.setString(i + 1, o[i % 3]);
          }
          deleted += ps.executeUpdate();
        }
      }
      return deleted;
    } catch (SQLException e) {
      throw table.failure("purging orphaned steps", e);
    }
  }

  private void ensureSchema() {
    if (schemaReady || !createSchema) {
      return;
    }
    try (Connection c = table.connection()) {
      createSchema(c);
      schemaReady = true;
    } catch (SQLException e) {
      throw table.failure("creating table " + stepTable, e);
    }
  }

  /** Builds a {@link JdbcStepOperations}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final DataSource dataSource;
    private String keyTable = "idem_keys";
    private String stepTable = DEFAULT_STEP_TABLE;
    private Duration lease = Duration.ofSeconds(30);
    private Duration retention = Duration.ofHours(24);
    private boolean createSchema = true;
    private TraceContextPropagation tracing = TraceContextPropagation.NONE;
    private boolean keepTraceContext;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /** @param table the key table, a plain SQL identifier of at most 48 characters */
    public Builder keyTable(String table) {
      this.keyTable = identifier(table);
      return this;
    }

    /** @param table the step table, a plain SQL identifier of at most 48 characters */
    public Builder stepTable(String table) {
      this.stepTable = identifier(table);
      return this;
    }

    /**
     * @param lease how long a run holds the operation without recording a step, positive; each
     *     recorded step renews it. After it, a retry or the completer takes the operation over
     */
    public Builder lease(Duration lease) {
      Objects.requireNonNull(lease, "lease");
      if (lease.isNegative() || lease.isZero()) {
        throw new IllegalArgumentException("lease must be positive, was " + lease);
      }
      this.lease = lease;
      return this;
    }

    /** @param retention how long a completed operation's final response is kept, longer than the lease */
    public Builder retention(Duration retention) {
      Objects.requireNonNull(retention, "retention");
      if (retention.isNegative() || retention.isZero()) {
        throw new IllegalArgumentException("retention must be positive, was " + retention);
      }
      this.retention = retention;
      return this;
    }

    /**
     * @param tracing gives the trace context current when an operation's input is first recorded
     *     (kept with it when {@link #keepTraceContext}), and runs a resumption (by a retry or by the
     *     completer) of an operation whose input kept one in a span linked to it ({@link
     *     TraceContextPropagation#resumeLinked}); default {@link TraceContextPropagation#NONE},
     *     which keeps and links nothing
     * @return this builder
     */
    public Builder tracing(TraceContextPropagation tracing) {
      this.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /**
     * Whether an operation's input row keeps the trace context of the attempt that recorded it (as
     * a third line of the row). Default {@code false}: versions of Idem before this one cannot read
     * such a row (their parser expects two lines), so a node of an older version, during a rolling
     * upgrade or after a rollback, could not resume an operation a newer node began. Turn it on once
     * every node that shares the step table runs this version; rows with the line are read whatever
     * this says.
     *
     * @param keep whether to keep it
     * @return this builder
     */
    public Builder keepTraceContext(boolean keep) {
      this.keepTraceContext = keep;
      return this;
    }

    /** @param createSchema whether missing tables are created on first use (default {@code true}) */
    public Builder createSchema(boolean createSchema) {
      this.createSchema = createSchema;
      return this;
    }

    /**
     * @return the operations, never {@code null}
     * @throws IllegalArgumentException if the retention is not longer than the lease
     */
    public JdbcStepOperations build() {
      if (retention.compareTo(lease) <= 0) {
        throw new IllegalArgumentException("retention (" + retention + ") must be longer than the lease (" + lease + ")");
      }
      return new JdbcStepOperations(this);
    }

    private static String identifier(String table) {
      Objects.requireNonNull(table, "table");
      if (!IDENTIFIER.matcher(table).matches()) {
        throw new IllegalArgumentException("a table name is a plain SQL identifier of at most 48 characters, was '" + table + "'");
      }
      return table;
    }
  }


  /**
   * The value of an operation's input row: the fingerprint's hex digits, a line feed, the input in
   * Base64 and, when a trace context was kept, a line feed and the context as Base64 of UTF-8
   * {@code name=value} lines. Rows of earlier versions have no third line and read with an empty
   * context.
   */
  record InputRecord(String fingerprintHex, byte[] input, Map<String, String> traceContext) {

    static String format(String fingerprintHex, byte[] input, Map<String, String> traceContext) {
      String value = fingerprintHex + "\n" + java.util.Base64.getEncoder().encodeToString(input);
      StringBuilder context = new StringBuilder();
      traceContext.forEach((name, v) -> {
        if (name.indexOf('=') < 0 && name.indexOf('\n') < 0 && v.indexOf('\n') < 0 && v.indexOf('\r') < 0
            && name.length() + v.length() <= StoredResponse.MAX_HEADER_LENGTH) {
          context.append(context.length() == 0 ? "" : "\n").append(name).append('=').append(v);
        }
      });
      return context.length() == 0 ? value
          : value + "\n" + java.util.Base64.getEncoder().encodeToString(context.toString().getBytes(StandardCharsets.UTF_8));
    }

    static InputRecord parse(String value) {
      String[] parts = value.split("\n", 3);
      byte[] input = java.util.Base64.getDecoder().decode(parts.length > 1 ? parts[1] : "");
      Map<String, String> context = new LinkedHashMap<>();
      if (parts.length > 2) {
        try {
          for (String line : new String(java.util.Base64.getDecoder().decode(parts[2]), StandardCharsets.UTF_8).split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
              context.putIfAbsent(line.substring(0, eq).toLowerCase(Locale.ROOT), line.substring(eq + 1));
            }
          }
        } catch (IllegalArgumentException unreadable) {
          context.clear(); // a context that cannot be read links nothing; the operation goes on
        }
      }
      return new InputRecord(parts[0], input, Collections.unmodifiableMap(context));
    }
  }
}
