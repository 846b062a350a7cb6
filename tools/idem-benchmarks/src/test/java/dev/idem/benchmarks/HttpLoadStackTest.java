package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** HttpLoad's {@code --stack}: which service, regimes, variant arguments and output files each one means. */
class HttpLoadStackTest {

  @Test
  void webfluxRunsTheWebFluxJarOnPostgresOnlyAndWritesItsOwnReport() {
    HttpLoad.Stack s = HttpLoad.stack("webflux");
    assertSame(HttpLoad.WEBFLUX, s);
    assertTrue(s.webflux());
    assertEquals("examples/notes-webflux/target/notes-webflux.jar", s.jar());
    assertEquals(List.of("postgres", "postgres-async"), s.regimes());
    assertEquals("benchmarks-webflux.md", s.report());
    assertEquals("data/webflux.csv", s.csv());
    assertTrue(s.command().endsWith("HttpLoad --stack webflux --out docs/reports"), s.command());
  }

  @Test
  void webflux_transactionalIsTheDefaultModeAndLeaseKeepsItsKeysInR2dbc() {
    assertEquals(List.of(), HttpLoad.WEBFLUX.transactional());
    assertEquals(List.of("--idem.mode=lease", "--idem.in-progress=fail-fast", "--idem.store=r2dbc"), HttpLoad.WEBFLUX.lease());
  }

  @Test
  void servletIsTheDefaultAndKeepsTheHttpReportItsFiveRegimesAndArguments() {
    HttpLoad.Stack s = HttpLoad.stack("servlet");
    assertSame(HttpLoad.SERVLET, s);
    assertFalse(s.webflux());
    assertEquals("examples/notes-service/target/notes-service.jar", s.jar());
    assertEquals(List.of("sqlite", "postgres", "postgres-async", "mariadb", "mariadb-async"), s.regimes());
    assertEquals("benchmarks-http.md", s.report());
    assertEquals("data/http.csv", s.csv());
    assertEquals(HttpLoad.COMMAND, s.command());
    assertEquals(List.of("--idem.mode=transactional"), s.transactional());
    assertEquals(List.of("--idem.mode=lease", "--idem.in-progress=fail-fast"), s.lease());
  }

  @Test
  void anUnknownStackIsRefused() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HttpLoad.stack("reactive"));
    assertTrue(e.getMessage().contains("servlet or webflux"), e.getMessage());
  }
}
