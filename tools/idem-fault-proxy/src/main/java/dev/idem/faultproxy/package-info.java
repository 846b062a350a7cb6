/**
 * {@link dev.idem.faultproxy.FaultProxy}: a loopback HTTP/1.1 proxy that loses a response after
 * the server wrote it, drops a request before the server sees it, or delays it, chosen per request
 * number ({@link dev.idem.faultproxy.Fault}). Used by the HTTP lab, {@code idem check} and tests.
 *
 * <h2>Why not Jetty's proxy</h2>
 *
 * <p>The build already has Jetty, and Jetty 12 has a proxy ({@code org.eclipse.jetty.proxy.ProxyHandler}
 * and the servlet proxies of {@code jetty-ee10-proxy}). It was considered and not used, because this
 * proxy's job is to be byte-exact and to fail at precise points, which Jetty's proxy, by design,
 * is not:
 *
 * <ul>
 *   <li><b>Byte-for-byte relay.</b> Jetty's proxy decodes each message and sends a new one through
 *       Jetty's {@code HttpClient}: it removes hop-by-hop fields ({@code Connection}, {@code
 *       Keep-Alive}, {@code Transfer-Encoding}, …), adds {@code Via} and, in the servlet proxies,
 *       {@code X-Forwarded-*}, re-derives {@code Host} and {@code Content-Length}, re-chunks
 *       bodies, and answers framing it does not accept with its own error. {@code idem check}
 *       judges the API behind the proxy, so it must see that API's own framing and header fields;
 *       this proxy forwards messages exactly as received and adds nothing.
 *   <li><b>Loss after the whole response.</b> {@link dev.idem.faultproxy.Fault#LOSE_RESPONSE} reads
 *       the complete response from the server (so the effect and the answer both happened) and
 *       only then resets the client connection. Jetty's proxy streams the response to the client as
 *       it arrives; a loss at that point would need a buffering content transformer plus an abort
 *       of the client's connection, that is, the fault logic would still be written here, on top
 *       of a re-framing proxy.
 *   <li><b>Deterministic numbering and resets.</b> Requests are numbered in the order their heads
 *       are read, across keep-alive connections, and a lost response is a TCP reset the client
 *       sees as "connection reset", not a clean end of stream.
 *   <li><b>JDK only.</b> The {@code idem} command-line jar carries the proxy; with Jetty it would
 *       carry a Jetty server and client as well.
 * </ul>
 *
 * <p>What it costs: its own HTTP/1.1 framing ({@code Http1}, RFC 9112: Content-Length, chunked and
 * close-delimited bodies, 1xx responses, {@code Expect: 100-continue}), covered by {@code
 * FaultProxyFramingTest}. It supports no TLS, HTTP/2, {@code CONNECT} or upgrades, which the lab
 * and {@code idem check} do not need.
 */
package dev.idem.faultproxy;
