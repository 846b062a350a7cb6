package dev.idem.examples.notes.webflux;

/**
 * The notes API contract on the WebFlux service as it ships: only {@code idem.principal} set, so
 * that Idem runs transactional mode on R2DBC (the note, the key and the stored answer in one
 * reactive transaction).
 */
class NotesWebFluxTransactionalTest extends NotesWebFluxContract {}
