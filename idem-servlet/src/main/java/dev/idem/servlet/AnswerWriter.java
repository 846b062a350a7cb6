package dev.idem.servlet;

import dev.idem.core.AttemptResult;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.StoredResponse;
import dev.idem.servlet.internal.CapturingResponse;
import dev.idem.core.http.HeaderRules;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The answering half of {@link IdempotencyFilter}: what the client gets for a request the {@link
 * RequestReader} refused, and for each kind of {@link AttemptResult} (the handler's answer, a
 * replay, or one of Idem's problems through {@link IdemProblems}). Stateless.
 */
final class AnswerWriter {

  private static final System.Logger LOG = System.getLogger(IdempotencyFilter.class.getName());

  private AnswerWriter() {}

  /**
   * Answers a request refused before the engine: tells the configuration's listener (which must
   * not change the answer), drops what is left of the body, and sends the problem.
   */
  static void refuse(IdempotencyFilterConfig cfg, HttpServletRequest req, RequestReader.Refusal refusal, HttpServletResponse res)
      throws IOException {
    if (refusal.reason() != null) {
      try {
        cfg.listener().refused(Operations.operation(cfg, req.getMethod(), refusal.path(), req.getContextPath(), refusal.route()),
            refusal.reason());
      } catch (RuntimeException ignored) {
        // a listener must not change the answer
      }
    }
    if (refusal.unreadBody()) {
      RequestReader.dropUnreadBody(req, res);
    }
    cfg.problems().send(refusal.problem(), res);
  }

  /**
   * Sends what the engine's result says: the handler's answer, a replay, or one of the filter's
   * problems; or rethrows what the handler threw.
   */
  static void write(IdempotencyFilterConfig cfg, AttemptResult result, HandlerEffect run, HttpServletResponse res)
      throws IOException, ServletException {
    RuntimeException e = result.failure().orElse(null);
    switch (result.kind()) {
      case REPLAYED -> replay(cfg, result.outcome().orElseThrow().response(), res);
      case EXECUTED, RELEASED -> handlersAnswer(cfg, result, run, res, e);
      case KEY_REUSED, IN_PROGRESS -> {
        rethrowHandlerFailure(run);
        cfg.problems().send(cfg.problems().forResult(result), res);
      }
      case OUTCOME_UNKNOWN -> {
        rethrowHandlerFailure(run);
        if (IdemProblems.phaseOf(result) == OutcomeUnknownException.Phase.COMPLETION) {
          // Lease mode: the handler ran, and its answer is not stored (or is unknown to be).
          // Sending it would be a fresh answer that a retry could contradict; the retry with the
          // same key gets the stored answer or resumes the operation as a recovery.
          if (captured(run).overflowed()) {
            // An answer over the limit has already streamed to the client; it cannot be withdrawn.
            LOG.log(Level.WARNING, "idempotency filter: the handler ran and its answer over the limit was sent, but the key could not be completed", e);
            return;
          }
          LOG.log(Level.WARNING, "idempotency filter: the handler ran but its answer could not be stored; answering 503 outcome-unknown", e);
        } else {
          // Transactional mode: the commit was sent and its acknowledgement lost.
          transactionFailed(result.kind(), res, e);
        }
        cfg.problems().send(cfg.problems().forResult(result), res);
      }
      case ROLLED_BACK, REQUEST_FAILED -> {
        rethrowHandlerFailure(run);
        transactionFailed(result.kind(), res, e);
        cfg.problems().send(cfg.problems().forResult(result), res);
      }
      case STORED_RESPONSE_UNREADABLE -> {
        rethrowHandlerFailure(run);
        // The key is answered but its stored response fails authentication or decoding: never
        // replay bytes that cannot be authenticated, never run the operation again. Not a 503: a
        // retry cannot succeed until an operator restores the key or investigates the tampering.
        LOG.log(Level.ERROR, "idempotency filter: a stored response cannot be read; answering 500", e);
        cfg.problems().send(cfg.problems().forResult(result), res);
      }
      default -> { // STORE_UNAVAILABLE
        rethrowHandlerFailure(run);
        // The claim failed (already retried by the engine with the same owner token), or an
        // interrupted wait: the handler did not run.
        LOG.log(Level.WARNING, "idempotency filter: the key could not be claimed; answering 503", e);
        cfg.problems().send(cfg.problems().forResult(result), res);
      }
    }
  }

  /**
   * Answers an engine that threw instead of giving a result: the handler's own failure as it was
   * (nothing of it is kept), or 503 when that failure says its outcome is unknown; else the
   * engine's exception.
   */
  static void failed(IdempotencyFilterConfig cfg, RuntimeException e, HandlerEffect run, HttpServletResponse res)
      throws IOException, ServletException {
    if (run.failure != null) {
      OutcomeUnknownException unknown = outcomeUnknownIn(run.failure);
      if (unknown != null && !res.isCommitted()) {
        // The handler says its outcome is unknown, such as an operation of steps that stopped
        // after some of them (JdbcStepOperations.runClaimed): 503 with Retry-After, so that the
        // caller retries with the same key, which resumes it, rather than with a new one.
        res.resetBuffer();
        cfg.problems().send(cfg.problems().forException(unknown).orElseThrow(), res);
        return;
      }
      rethrow(run.failure); // the handler's own failure, as it was (nothing of it is kept)
    }
    throw e;
  }

  /** The handler ran: its answer, unless it already streamed past the limit. */
  private static void handlersAnswer(IdempotencyFilterConfig cfg, AttemptResult result, HandlerEffect run, HttpServletResponse res,
      @Nullable RuntimeException e) throws IOException, ServletException {
    if (e != null) {
      // The handler ran and answered with what the response policy does not store (a 5xx), and
      // the release failed: the answer is sent as it is; the claim expires with its lease.
      LOG.log(Level.WARNING, "idempotency filter: the handler ran but its claim could not be released; sending its answer unstored", e);
    }
    CapturingResponse captured = captured(run);
    if (captured.overflowed()) {
      // Already streamed to the client; the engine stored the record without the body (or
      // released the claim, as its response policy says for this status).
      if (result.kind() == AttemptResult.Kind.EXECUTED) {
        notStoredWarning(cfg, run, captured);
      }
      if (run.failure != null) {
        rethrow(run.failure); // the handler failed mid-answer: the container aborts the exchange
      }
    } else {
      captured.writeTo(res);
    }
  }

  private static CapturingResponse captured(HandlerEffect run) {
    CapturingResponse captured = run.captured;
    if (captured == null) {
      throw new IllegalStateException("the engine answered with the handler's answer but did not run the handler");
    }
    return captured;
  }

  /**
   * Before one of the filter's problems: the handler threw after part of its answer was sent, and
   * the key could not be completed. Let the container see the original.
   */
  private static void rethrowHandlerFailure(HandlerEffect run) throws IOException, ServletException {
    if (run.failure != null) {
      rethrow(run.failure);
    }
  }

  private static void replay(IdempotencyFilterConfig cfg, StoredResponse stored, HttpServletResponse res) throws IOException {
    if (!stored.bodyStored()) {
      // The first answer was too large to store (IdemProblems#responseTooLarge).
      cfg.problems().send(cfg.problems().responseTooLarge(stored), res);
      return;
    }
    res.setStatus(stored.status());
    for (Map.Entry<String, List<String>> field : stored.headers().entrySet()) {
      String name = field.getKey();
      if (!cfg.replayedHeaders().contains(name) || HeaderRules.neverStored(name)) {
        continue; // also for records written under another configuration
      }
      for (String value : field.getValue()) {
        if (name.equalsIgnoreCase("Content-Type")) {
          res.setContentType(value);
        } else {
          res.addHeader(name, value);
        }
      }
    }
    res.setHeader(IdempotencyFilter.REPLAYED_HEADER, "true");
    byte[] body = stored.body();
    res.setContentLength(body.length);
    if (body.length > 0) {
      res.getOutputStream().write(body);
    }
  }

  /** A warning without the key (logs carry no keys or principals): the limit is too low for this route. */
  private static void notStoredWarning(IdempotencyFilterConfig cfg, HandlerEffect run, CapturingResponse captured) {
    LOG.log(Level.WARNING, "idempotency filter: an answer to " + run.idempotent.scope().operation() + " (status "
        + captured.getStatus() + ", " + captured.bodyLength() + " bytes" + (run.failure != null ? " before the handler failed" : "")
        + ") was longer than maxResponseBytes (" + cfg.maxResponseBytes() + " bytes): it was streamed to the client and only"
        + " its status is stored, so a retry with the same key is answered 422 " + IdemProblems.RESPONSE_TOO_LARGE
        + " and does not run the operation again; raise maxResponseBytes if such retries must be replayed");
  }

  /**
   * Transactional mode: the handler ran, but its transaction did not commit, or may not have.
   * An answer over maxResponseBytes streamed to the client before the commit; nothing can be
   * taken back or appended, so the exchange fails, the container closes the connection, and the
   * client sees a broken answer (not a clean one for writes that were rolled back) and retries.
   * Else the failure is logged before the problem is sent.
   */
  private static void transactionFailed(AttemptResult.Kind kind, HttpServletResponse res, @Nullable RuntimeException e)
      throws IOException {
    if (res.isCommitted()) {
      LOG.log(Level.ERROR, "idempotency filter: an answer longer than maxResponseBytes had already streamed to the client"
          + " when its transaction failed to commit; aborting the response", e);
      throw new IOException("the transaction behind this streamed answer did not commit", e);
    }
    if (kind == AttemptResult.Kind.OUTCOME_UNKNOWN) {
      // The commit was sent and its acknowledgement lost. The writes and the stored response
      // committed together or not at all, so a retry with the key is safe.
      LOG.log(Level.WARNING, "idempotency filter: the outcome of the handler's transaction is unknown (the commit's"
          + " acknowledgement was lost); answering 503", e);
    } else if (kind == AttemptResult.Kind.REQUEST_FAILED) {
      // The request itself failed (the database refused its data, or the handler answered success
      // after an error that rolled its writes back). Not a store outage: "retry later" would fail
      // the same way.
      LOG.log(Level.WARNING, "idempotency filter: the handler's transaction was rolled back by a failure of the"
          + " request itself; answering 500", e);
    } else {
      // The handler ran, but its writes rolled back with the key's record. Its answer would
      // describe an effect that did not happen; the client retries.
      LOG.log(Level.WARNING, "idempotency filter: the handler's transaction did not commit; answering 503", e);
    }
  }

  /**
   * @return the {@link OutcomeUnknownException} that {@code t} is or wraps (a few causes deep), or
   *     {@code null}; one an HTTP client the handler called threw ({@link
   *     OutcomeUnknownException#thrownByClient}) is the handler's own failure, not this one
   */
  private static @Nullable OutcomeUnknownException outcomeUnknownIn(Throwable t) {
    Throwable c = t;
    for (int depth = 0; c != null && depth < 5; depth++, c = c.getCause()) {
      if (c instanceof OutcomeUnknownException unknown && !OutcomeUnknownException.thrownByClient(unknown)) {
        return unknown;
      }
    }
    return null;
  }

  static void rethrow(Throwable t) throws IOException, ServletException {
    if (t instanceof IOException io) {
      throw io;
    }
    if (t instanceof ServletException se) {
      throw se;
    }
    if (t instanceof RuntimeException re) {
      throw re;
    }
    if (t instanceof Error err) {
      throw err;
    }
    throw new ServletException(t);
  }
}
