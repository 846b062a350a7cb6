package dev.idem.docs;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.HttpOperation;
import dev.idem.client.IdempotentHttpClient;
import dev.idem.client.OperationResult;
import dev.idem.client.PendingJournal;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.faultproxy.Fault;
import dev.idem.faultproxy.FaultProxy;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;

/** The snippets of docs/client.md; {@link ClientSnippetsTest} runs them against a small local server. */
final class ClientSnippets {

  private ClientSnippets() {}

  static IdempotentHttpClient client(Path pending) {
    // tag::client[]
    IdempotentHttpClient client = IdempotentHttpClient.builder(HttpClient.newHttpClient())
        .retryPolicy(ClientRetryPolicy.builder().maxAttempts(4).maxDuration(Duration.ofSeconds(30)).build())
        .journal(PendingJournal.open(pending))           // optional: survive a restart
        .build();
    // end::client[]
    return client;
  }

  static OperationResult send(IdempotentHttpClient client, URI notes) throws InterruptedException {
    OperationResult answer = null;
    // tag::send[]
    HttpOperation save = HttpOperation.postJson(notes, "{\"title\":\"milk\"}");
    try {
      OperationResult result = client.send(save);   // throws InterruptedException if interrupted
      // result.status(), result.attempts(), result.replayed(), result.bodyAsString()
      answer = result;
    } catch (OutcomeUnknownException e) {
      // Every attempt failed; the note may exist. The journal keeps the operation, and a later
      // client.send(save.withKey(e.key())) or client.resumePending() replays or completes it.
    } catch (IdempotencyKeyReusedException e) {
      // 422 with the key-reused problem type: this key was already used with another payload
    }
    // end::send[]
    return answer;
  }

  static OperationResult lostResponse(IdempotentHttpClient client, int port) throws IOException, InterruptedException {
    OperationResult answer;
    // tag::fault-proxy[]
    try (FaultProxy proxy = FaultProxy.builder().target("127.0.0.1", port)
        .fault(1, Fault.LOSE_RESPONSE).start()) {      // start() throws IOException if it cannot listen
      OperationResult r = client.send(HttpOperation.postJson(proxy.uri().resolve("/notes"), "{\"title\":\"milk\"}"));
      // attempt 1 is written by the server and lost on the way back; attempt 2 is replayed:
      // r.attempts() == 2, r.replayed() == true, and the service holds one note
      answer = r;
    }
    // end::fault-proxy[]
    return answer;
  }
}
