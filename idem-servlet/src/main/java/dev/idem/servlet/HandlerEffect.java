package dev.idem.servlet;

import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.servlet.internal.BufferedRequest;
import dev.idem.servlet.internal.CapturingResponse;
import dev.idem.core.http.HeaderRules;
import jakarta.servlet.FilterChain;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The handler (the rest of the filter chain) as the engine's effect: runs it against a {@link
 * CapturingResponse} with the claim's {@link IdempotencyFilter#connection connection} or {@link
 * IdempotencyFilter#leaseContext lease} on the request, and remembers what it captured and how it
 * ended, for {@link AnswerWriter}. One instance per request, on its thread.
 */
final class HandlerEffect implements Effect {

  private static final System.Logger LOG = System.getLogger(IdempotencyFilter.class.getName());

  private final IdempotencyFilterConfig cfg;
  private final BufferedRequest request;
  private final HttpServletResponse response;
  private final FilterChain chain;
  final IdempotentRequest idempotent;
  /** The handler's answer as the last run captured it; {@code null} before the handler ran. */
  @Nullable CapturingResponse captured;
  /** What the handler threw after part of its answer had reached the client, or as it ended. */
  @Nullable Throwable failure;
  /** Whether the key, claimed as the answer began to stream, turned out to be another attempt's. */
  private boolean claimLost;

  HandlerEffect(IdempotencyFilterConfig cfg, IdempotentRequest idempotent, BufferedRequest request, HttpServletResponse response,
      FilterChain chain) {
    this.cfg = cfg;
    this.idempotent = idempotent;
    this.request = request;
    this.response = response;
    this.chain = chain;
  }

  @Override
  public StoredResponse run(EffectContext context) throws Exception {
    if (context.inTransaction()) {
      request.setAttribute(IdempotencyFilter.CONNECTION_ATTRIBUTE, context.connection());
    } else {
      request.setAttribute(IdempotencyFilter.LEASE_CONTEXT_ATTRIBUTE, context.lease());
    }
    // The engine may run the effect again (a round the database rolled back): nothing of an
    // earlier run's answer or failure is kept.
    CapturingResponse captured = new CapturingResponse(response, request.getRequestURI(), cfg.maxResponseBytes());
    this.captured = captured;
    claimLost = false;
    failure = null;
    // An answer that streams to the client needs its key first: in key-last order the engine
    // claims it now, and refuses when another attempt holds it or has answered.
    captured.beforeOverflow(() -> {
      try {
        context.ensureClaimed();
      } catch (RuntimeException e) {
        claimLost = true;
        throw e;
      }
    });
    try {
      chain.doFilter(request, captured);
      captured.finish(); // the writer's last characters may still push the body past the limit
    } catch (Throwable t) {
      if (claimLost) {
        throw t; // nothing reached the client; the engine answers from the attempt that holds the key
      }
      failure = t;
      if (!captured.overflowed()) {
        throw t; // nothing reached the client: the engine keeps nothing of the attempt (contract rule 6)
      }
      // The status, header fields and part of the body already reached the client: the effect
      // happened as far as it can tell. The key stays completed with a record of what was sent
      // rather than freed for a second run; the filter rethrows the failure afterwards.
    } finally {
      request.removeAttribute(IdempotencyFilter.CONNECTION_ATTRIBUTE); // the transaction's connection is not the handler's after this
    }
    return toStored(captured);
  }

  /**
   * Builds what is stored: the whole answer, or after an overflow the record of it without its
   * body. Never throws, since the handler's effect has happened.
   */
  private StoredResponse toStored(CapturingResponse captured) {
    int status = captured.getStatus();
    StoredResponse.Builder b = StoredResponse.builder(status >= 100 && status <= 599 ? status : 500);
    for (Map.Entry<String, List<String>> field : captured.headerFields().entrySet()) {
      String name = field.getKey();
      if (!cfg.replayedHeaders().contains(name) || HeaderRules.neverStored(name)) {
        continue;
      }
      for (String value : field.getValue()) {
        try {
          b.header(name, value);
        } catch (IllegalArgumentException e) {
          LOG.log(Level.WARNING, "idempotency filter: response header " + name + " cannot be stored and is left out of replays: " + e.getMessage());
        }
      }
    }
    if (captured.overflowed()) {
      return b.bodyNotStored(captured.bodyLength()).build();
    }
    return b.body(captured.body()).build();
  }
}
