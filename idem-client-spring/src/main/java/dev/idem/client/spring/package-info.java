/**
 * Idempotency keys on Spring's HTTP clients: {@link
 * dev.idem.client.spring.IdempotentExchangeFilter} (WebClient) and {@link
 * dev.idem.client.spring.IdempotentRequestInterceptor} (RestClient, RestTemplate). Both keep one
 * key per logical operation across their retries and follow {@link dev.idem.client.ClientRetryPolicy}.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.client.spring;

import org.jspecify.annotations.NullMarked;
