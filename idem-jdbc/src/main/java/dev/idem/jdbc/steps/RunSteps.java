package dev.idem.jdbc.steps;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.steps.DerivedKeys;
import dev.idem.core.steps.Steps;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Steps} of one run of an operation: a step recorded by an earlier run returns its
 * recorded result, any other runs and is recorded ({@link StepTable#record}). Used by the run's
 * thread only.
 */
final class RunSteps implements Steps {
  private final StepTable table;
  private final IdempotentRequest request;
  private final String owner;
  private final Map<String, String> recorded;
  final byte[] input;
  /** The trace context kept with the input by the run that recorded it; empty for none. */
  final Map<String, String> firstAttempt;
  private final boolean resumed;
  private final java.util.Set<String> seen = new java.util.HashSet<>();
  private int recordedNow;

  RunSteps(StepTable table, IdempotentRequest request, String owner, Map<String, String> recorded, byte[] input,
      Map<String, String> firstAttempt, boolean resumed) {
    this.table = table;
    this.request = request;
    this.owner = owner;
    this.recorded = recorded;
    this.input = input;
    this.firstAttempt = firstAttempt;
    this.resumed = resumed;
  }

  /** @return whether any step of the operation is recorded, by this run or an earlier one */
  boolean anyRecorded() {
    return recordedNow > 0 || !recorded.isEmpty();
  }

  @Override
  public Scope scope() {
    return request.scope();
  }

  @Override
  public IdempotencyKey key() {
    return request.key();
  }

  @Override
  public boolean resumed() {
    return resumed;
  }

  @Override
  public String local(String name, LocalStep body) throws Exception {
    Objects.requireNonNull(body, "body");
    String done = before(name);
    if (done != null) {
      return done;
    }
    String result = table.record(request, owner, name, null, body);
    recordedNow++;
    recorded.put(name, result);
    return result;
  }

  @Override
  public String foreign(String name, ForeignCall call) throws Exception {
    Objects.requireNonNull(call, "call");
    String done = before(name);
    if (done != null) {
      return done;
    }
    String answer = Objects.requireNonNull(call.call(DerivedKeys.of(request.scope(), request.key(), name)), "the call returned null");
    StepTable.checkResult(name, answer);
    table.record(request, owner, name, answer, null);
    recordedNow++;
    recorded.put(name, answer);
    return answer;
  }

  private @Nullable String before(String name) {
    DerivedKeys.checkStepName(name);
    if (!seen.add(name)) {
      throw new IllegalArgumentException("step '" + name + "' is run twice in one operation; step names are unique");
    }
    return recorded.get(name);
  }
}
