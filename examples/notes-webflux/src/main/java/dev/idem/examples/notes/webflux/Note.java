package dev.idem.examples.notes.webflux;

/**
 * A stored note, as the API returns it: {@code {"id": 1, "title": "..."}}.
 *
 * @param id the identifier the database assigned
 * @param title the title, 1 to {@value NoteRepository#MAX_TITLE_LENGTH} characters
 */
public record Note(long id, String title) {}
