package dev.idem.spring.openapi;

import dev.idem.core.IdempotencyEngine;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.http.ProblemCatalog;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.Operation;
import io.swagger.v3.oas.models.PathItem;
import io.swagger.v3.oas.models.headers.Header;
import io.swagger.v3.oas.models.media.Content;
import io.swagger.v3.oas.models.media.MediaType;
import io.swagger.v3.oas.models.media.ObjectSchema;
import io.swagger.v3.oas.models.media.StringSchema;
import io.swagger.v3.oas.models.parameters.HeaderParameter;
import io.swagger.v3.oas.models.responses.ApiResponse;
import io.swagger.v3.oas.models.responses.ApiResponses;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springdoc.core.customizers.OpenApiCustomizer;

/**
 * Describes Idem's contract in the application's OpenAPI document (springdoc-openapi): every
 * operation that a route of the filter protects gets the {@code Idempotency-Key} request header
 * (required or optional as its route says), the {@code Idempotent-Replayed} header on its
 * responses, Idem's problem answers (RFC 9457, {@code application/problem+json}, each naming its
 * problem type URIs) for 400, 409, 422 and 503 where the operation does not describe that status
 * itself, and its expiry policy: how long a key is kept (the route's own retention, else its
 * engine's where the engine says, else {@code idem.retention}), in the header's description and as the extension {@code x-idempotency-key} =
 * {@code {required, retention}} (an ISO-8601 duration), since the IETF draft
 * (draft-ietf-httpapi-idempotency-key-header, section 2.3) asks a server to publish its expiry
 * policy. Operations no route protects are left as they are. The path of an operation is matched
 * as the filter matches a request's path, a template variable standing for one segment.
 *
 * <p>One description for both stacks: the filter's routes come in as {@link Routes}, from the
 * servlet filter's {@link IdempotencyFilterConfig} ({@link #routes(IdempotencyFilterConfig)}) on
 * Spring MVC or from the WebFlux filter's configuration ({@link WebFluxRoutes}) on WebFlux.
 *
 * <p>Thread-safe; holds no state but the configuration.
 */
final class IdemOpenApi implements OpenApiCustomizer {

  static final String KEY_HEADER = "Idempotency-Key";
  static final String REPLAYED_HEADER = "Idempotent-Replayed";
  static final String EXTENSION = "x-idempotency-key";

  /**
   * What the document needs of a filter's configuration: which route protects a request, and the
   * type URIs of Idem's problems. Implementations are thread-safe.
   */
  interface Routes {
    /**
     * @param method the request method, such as {@code POST}; never {@code null}
     * @param path the request path as the filter matches it, never {@code null}
     * @return how the first route that matches protects the request, or {@code null} if none does
     */
    @Nullable Protection protection(String method, String path);

    /**
     * @param name the problem's name, one of {@link ProblemCatalog}'s constants; never {@code null}
     * @return its type URI as the filter answers it, or {@code null} for about:blank problem types
     */
    @Nullable String problemType(String name);
  }

  /**
   * How a route protects its requests.
   *
   * @param required whether a request without a key is refused (400), else it runs unprotected
   * @param retention how long the route's own policy keeps a key, or empty for {@code idem.retention};
   *     never {@code null}
   */
  record Protection(boolean required, Optional<Duration> retention) {
    /** @throws NullPointerException if {@code retention} is {@code null} */
    Protection {
      Objects.requireNonNull(retention, "retention");
    }
  }

  private final Routes routes;
  private final Duration retention;
  private final String pathPrefix;

  /**
   * @param routes the filter's routes, which say what is protected; never {@code null}
   * @param retention {@code idem.retention}: how long a route without its own policy keeps a key;
   *     never {@code null}
   * @param pathPrefix what the filter's paths have before the document's, or {@code null} (as
   *     empty and {@code /}) for nothing: {@code spring.mvc.servlet.path} on Spring MVC, since the
   *     servlet filter matches routes on the servlet path and the path info and springdoc's paths
   *     leave the servlet path out; nothing on WebFlux, where the filter matches the path within
   *     the application and springdoc's paths leave {@code spring.webflux.base-path} out alike
   * @throws NullPointerException if {@code routes} or {@code retention} is {@code null}
   */
  IdemOpenApi(Routes routes, Duration retention, @Nullable String pathPrefix) {
    this.routes = Objects.requireNonNull(routes, "routes");
    this.retention = Objects.requireNonNull(retention, "retention");
    this.pathPrefix = pathPrefix == null || pathPrefix.isEmpty() || pathPrefix.equals("/") ? ""
        : (pathPrefix.endsWith("/") ? pathPrefix.substring(0, pathPrefix.length() - 1) : pathPrefix);
  }

  /**
   * @param filter the servlet filter's configuration, never {@code null}
   * @return its routes (each with its own retention, if its policy has one) and problem types
   */
  static Routes routes(IdempotencyFilterConfig filter) {
    Objects.requireNonNull(filter, "filter");
    return new Routes() {
      @Override
      public @Nullable Protection protection(String method, String path) {
        IdempotencyFilterConfig.Route route = filter.routeFor(method, path);
        return route == null ? null : new Protection(route.requirement() == KeyRequirement.REQUIRED,
            route.retention().or(() -> retentionOf(filter.engineFor(route))));
      }

      @Override
      public @Nullable String problemType(String name) {
        return filter.problemType(name);
      }
    };
  }

  /**
   * How long an engine keeps a key, where it says: a lease engine's retention, a transactional
   * engine's key table's. Empty for another engine (an application's own implementation, a
   * decorator), whose routes are documented with {@code idem.retention}.
   */
  static Optional<Duration> retentionOf(IdempotencyEngine engine) {
    if (engine instanceof LeaseIdempotency lease) {
      return Optional.of(lease.retention());
    }
    if (engine instanceof TransactionalIdempotency transactional) {
      return Optional.of(transactional.keys().retention());
    }
    return Optional.empty();
  }

  @Override
  public void customise(OpenAPI api) {
    if (api.getPaths() == null) {
      return;
    }
    for (Map.Entry<String, PathItem> path : api.getPaths().entrySet()) {
      for (Map.Entry<PathItem.HttpMethod, Operation> op : path.getValue().readOperationsMap().entrySet()) {
        Protection route = routes.protection(op.getKey().name(), pathPrefix + concretePath(path.getKey()));
        if (route != null) {
          describe(op.getValue(), route);
        }
      }
    }
  }

  /**
   * {@code /orders/{id}/lines} as a request path would be: each template variable one segment
   * (a variable with a regular expression, {@code {id:[0-9]{3}}}, included).
   */
  static String concretePath(String template) {
    StringBuilder out = new StringBuilder();
    int depth = 0;
    for (int i = 0; i < template.length(); i++) {
      char c = template.charAt(i);
      if (c == '{') {
        if (depth++ == 0) {
          out.append('x');
        }
      } else if (c == '}' && depth > 0) {
        depth--;
      } else if (depth == 0) {
        out.append(c);
      }
    }
    return out.toString();
  }

  private void describe(Operation op, Protection route) {
    boolean required = route.required();
    Duration kept = route.retention().orElse(retention);
    if (op.getParameters() == null || op.getParameters().stream().noneMatch(p -> "header".equals(p.getIn())
        && KEY_HEADER.equalsIgnoreCase(p.getName()))) {
      op.addParametersItem(new HeaderParameter().name(KEY_HEADER).required(required)
          .schema(new StringSchema().minLength(1).maxLength(255))
          .description("A unique key for this logical operation, the same on every retry of it (IETF"
              + " draft-ietf-httpapi-idempotency-key-header). A retry with the same key and payload gets the first"
              + " answer again, with " + REPLAYED_HEADER + ": true; the same key with another payload is refused (422)."
              + " Keys are kept for " + kept + " after the first request; a retry after that runs again."
              + (required ? "" : " Optional here: a request without it is not deduplicated.")));
    }
    Map<String, Object> policy = new LinkedHashMap<>();
    policy.put("required", required);
    policy.put("retention", kept.toString());
    op.addExtension(EXTENSION, policy);
    ApiResponses responses = op.getResponses() == null ? new ApiResponses() : op.getResponses();
    for (ApiResponse response : responses.values()) {
      if (response.getHeaders() == null || !response.getHeaders().containsKey(REPLAYED_HEADER)) {
        response.addHeaderObject(REPLAYED_HEADER, new Header().schema(new StringSchema()._enum(List.of("true")))
            .description("Present, with the value true, when this answer is a replay of the key's first answer"));
      }
    }
    problem(responses, "400", "The request's " + KEY_HEADER + " is " + (required ? "missing or " : "") + "malformed, or its"
        + " body does not parse", ProblemCatalog.KEY_MISSING, ProblemCatalog.KEY_MALFORMED, ProblemCatalog.PAYLOAD_INVALID);
    problem(responses, "409", "A request with the same key is still being processed; retry after Retry-After seconds",
        ProblemCatalog.IN_PROGRESS);
    problem(responses, "422", "The key was used before with another payload", ProblemCatalog.KEY_REUSED);
    problem(responses, "503", "The key could not be checked or recorded, or whether the request took effect is not"
        + " known; a retry with the same key after Retry-After seconds is safe", ProblemCatalog.STORE_UNAVAILABLE,
        ProblemCatalog.OUTCOME_UNKNOWN);
    op.setResponses(responses);
  }

  private void problem(ApiResponses responses, String status, String description, String... names) {
    if (responses.containsKey(status)) {
      return; // the operation describes it itself
    }
    List<String> types = new ArrayList<>();
    for (String name : names) {
      String type = routes.problemType(name);
      types.add(type == null ? "about:blank (" + name + ")" : type);
    }
    responses.addApiResponse(status, new ApiResponse()
        .description(description + ". Problem types: " + String.join(", ", types))
        .content(new Content().addMediaType("application/problem+json", new MediaType().schema(new ObjectSchema()))));
  }
}
