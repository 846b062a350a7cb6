package dev.idem.examples.notes.webflux;

import org.springframework.test.context.TestPropertySource;

/**
 * The notes API contract on the WebFlux service in lease mode: the keys in the R2DBC key table,
 * each note with its key's reference, and a duplicate that arrives while the first attempt runs
 * waiting for its answer ({@code idem.in-progress=wait}), as the contract's concurrent duplicates
 * expect.
 */
@TestPropertySource(properties = {"idem.mode=lease", "idem.in-progress=wait"})
class NotesWebFluxLeaseTest extends NotesWebFluxContract {}
