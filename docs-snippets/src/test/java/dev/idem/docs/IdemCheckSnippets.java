package dev.idem.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idem.check.CheckReport;
import dev.idem.check.IdemCheck;
import java.net.URI;
import org.springframework.jdbc.core.JdbcTemplate;

/** The snippet of docs/tools.md: {@code idem check} from a JUnit test; run by {@link SpringQuickStartTest}. */
final class IdemCheckSnippets {

  private IdemCheckSnippets() {}

  static CheckReport check(String base, JdbcTemplate jdbc) throws Exception {
    // tag::idem-check[]
    CheckReport report = IdemCheck.builder(URI.create(base + "/notes"))
        .body("{\"title\":\"check-{{uuid}}\"}")
        .countWith("notes whose title holds the marker",
            marker -> jdbc.queryForObject("SELECT COUNT(*) FROM notes WHERE instr(title, ?) > 0", Long.class, marker))
        .build()
        .run();                                   // throws ApiUnreachableException if nothing answers
    assertEquals(0, report.exitStatus(), report::toTable);
    // end::idem-check[]
    return report;
  }
}
