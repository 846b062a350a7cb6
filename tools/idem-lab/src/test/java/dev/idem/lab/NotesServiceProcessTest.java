package dev.idem.lab;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The R2DBC properties the WebFlux notes service gets from the lab's JDBC URL of its database. */
class NotesServiceProcessTest {

  @Test
  void theDatabaseAndTheUserOfAJdbcUrlBecomeSpringBootsR2dbcProperties() {
    assertThat(NotesServiceProcess.r2dbcProperties("jdbc:postgresql://127.0.0.1:5432/idem_http_lab_1?user=postgres"))
        .containsExactly(
            Map.entry("spring.r2dbc.url", "r2dbc:postgresql://127.0.0.1:5432/idem_http_lab_1"),
            Map.entry("spring.r2dbc.username", "postgres"));
  }

  @Test
  void aPasswordIsCarriedOverDecodedAndOtherParametersAreNot() {
    assertThat(NotesServiceProcess.r2dbcProperties("jdbc:postgresql://db:6543/notes?sslmode=disable&user=app&password=p%26ss"))
        .containsExactly(
            Map.entry("spring.r2dbc.url", "r2dbc:postgresql://db:6543/notes"),
            Map.entry("spring.r2dbc.username", "app"),
            Map.entry("spring.r2dbc.password", "p&ss"));
  }

  @Test
  void withoutAUserTheUserIsPostgres() {
    assertThat(NotesServiceProcess.r2dbcProperties("jdbc:postgresql://db/notes")).containsEntry("spring.r2dbc.username", "postgres")
        .containsEntry("spring.r2dbc.url", "r2dbc:postgresql://db/notes");
  }

  @Test
  void anotherDatabaseIsRefusedWithoutShowingItsPassword() {
    assertThatThrownBy(() -> NotesServiceProcess.r2dbcProperties("jdbc:mariadb://db/notes?user=root&password=secret"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("jdbc:mariadb://db/notes")
        .hasMessageNotContaining("secret");
  }
}
